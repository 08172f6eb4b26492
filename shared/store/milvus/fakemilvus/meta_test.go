package fakemilvus

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus/milvusexpr"
)

// hostile values: quotes, backslashes, control characters, operators, non-ASCII; a value that ended
// its literal early would change the expression's meaning or fail to parse
var hostile = []string{`a"b`, `a\b`, `\"`, "line\nbreak", "tab\tnul\x00", `" or tenant != "`, `x") or (1 == 1`, "保险",
	"emoji 🙂", `\u0041`, `'single'`, "", "2025-01-01", "2024-12-31T23:59:59Z", "1e3"}

var metaKeys = []string{"source", "year", "labels", "modified", "score", "title", "a.b-c_d"}

func randMeta(r *rand.Rand) rag.Metadata {
	m := rag.Metadata{}
	str := func() string {
		if r.IntN(3) == 0 {
			return hostile[r.IntN(len(hostile))]
		}
		return []string{"web", "wiki", "hr", "legal"}[r.IntN(4)]
	}
	for _, k := range metaKeys {
		switch r.IntN(6) {
		case 0: // absent
		case 1:
			m[k] = str()
		case 2:
			m[k] = float64(2018+r.IntN(9)) + []float64{0, 0.5, -0.25}[r.IntN(3)]
		case 3:
			var ls []string
			for range r.IntN(4) {
				ls = append(ls, str())
			}
			m[k] = ls
		case 4:
			m[k] = fmt.Sprintf("%d-%02d-%02d", 2020+r.IntN(6), 1+r.IntN(12), 1+r.IntN(28))
		default:
			m[k] = fmt.Sprintf("%d-%02d-%02dT%02d:%02d:00Z", 2020+r.IntN(6), 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60))
		}
	}
	n, err := m.Normalize()
	if err != nil {
		panic(err)
	}
	return n
}

func randFilter(r *rand.Rand, depth int) map[string]any {
	if depth > 0 && r.IntN(3) == 0 {
		switch r.IntN(3) {
		case 0, 1:
			var subs []any
			for range 1 + r.IntN(3) {
				subs = append(subs, randFilter(r, depth-1))
			}
			return map[string]any{[]string{"and", "or"}[r.IntN(2)]: subs}
		default:
			return map[string]any{"not": randFilter(r, depth-1)}
		}
	}
	key := metaKeys[r.IntN(len(metaKeys))]
	val := func() any {
		switch r.IntN(3) {
		case 0:
			return hostile[r.IntN(len(hostile))]
		case 1:
			return []string{"web", "wiki", "hr", "legal"}[r.IntN(4)]
		}
		return float64(2018+r.IntN(9)) + []float64{0, 0.5, -0.25}[r.IntN(3)]
	}
	date := func() string {
		if r.IntN(2) == 0 {
			return fmt.Sprintf("%d-%02d-01", 2020+r.IntN(6), 1+r.IntN(12))
		}
		return fmt.Sprintf("%d-%02d-15T12:00:00Z", 2020+r.IntN(6), 1+r.IntN(12))
	}
	switch r.IntN(6) {
	case 0:
		return map[string]any{"key": key, "eq": val()}
	case 1:
		return map[string]any{"key": key, "in": []any{val(), val(), val()}}
	case 2:
		lo := 2018 + r.IntN(9)
		return map[string]any{"key": key, []string{"gt", "gte"}[r.IntN(2)]: lo, []string{"lt", "lte"}[r.IntN(2)]: lo + r.IntN(4)}
	case 3:
		return map[string]any{"key": key, []string{"gt", "gte", "lt", "lte"}[r.IntN(4)]: date()}
	case 4:
		return map[string]any{"key": key, "exists": r.IntN(2) == 0}
	}
	return map[string]any{"key": key, "gte": date(), "lt": date()}
}

// TestMetaExprProperty: for 1,000 random filters (every form, nested, hostile strings as values) over
// 10,000 documents with random metadata (every kind of value under every key, hostile strings, dates
// in both forms), the Milvus expression milvusexpr.MetaExpr builds, parsed and evaluated by this
// server over the row's FieldMeta as milvusexpr.MetaJSON writes it, selects exactly the documents
// rag.MetaFilter.Match (the metadata index's reference) passes; and MetaSearchExpr around it keeps
// the tenant and knowledge-base clauses and lets rows of unknown metadata through.
func TestMetaExprProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 9))
	docs, filters := 10_000, 1000 // the size: 1,000 filters over 10,000 documents, as the SQLite adapter's
	if testing.Short() {
		docs, filters = 1000, 200
	}
	metas := make([]rag.Metadata, docs)
	rows := make([]map[string]any, docs)
	for i := range metas {
		metas[i] = randMeta(r)
		var v any
		if err := json.Unmarshal(milvusexpr.MetaJSON(metas[i], 7), &v); err != nil {
			t.Fatal(err)
		}
		rows[i] = map[string]any{"tenant": "t1", "kb_id": "kb", "meta": v}
	}
	matched := 0
	for i := range filters {
		raw, _ := json.Marshal(randFilter(r, 3))
		f, err := rag.ParseMetaFilter(raw)
		if err != nil {
			t.Fatalf("filter %s: %v", raw, err)
		}
		expr, err := milvusexpr.MetaExpr(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := parseExpr(expr)
		if err != nil {
			t.Fatalf("filter %s: expression %s does not parse: %v", raw, expr, err)
		}
		n := 0
		for d, row := range rows {
			got, err := p.eval(row)
			if err != nil {
				t.Fatalf("filter %s on document %d: %v", raw, d, err)
			}
			if want := f.Match(metas[d]); got != want {
				m, _ := json.Marshal(metas[d])
				t.Fatalf("filter %d %s\nexpression %s\nmetadata %s\nMilvus says %v, Match says %v", i, raw, expr, m, got, want)
			}
			if got {
				n++
			}
		}
		if n > 0 && n < docs {
			matched++
		}
	}
	if matched < filters/3 {
		t.Fatalf("only %d of %d filters split the documents: the generator tests too little", matched, filters)
	}
	t.Logf("%d filters over %d documents, %d selecting some but not all", filters, docs, matched)

	f, _ := rag.ParseMetaFilter([]byte(`{"key":"source","eq":"web"}`))
	expr, err := milvusexpr.MetaSearchExpr(rag.Filter{Tenant: "t1", KBIDs: []string{"kb"}, DocumentIDs: []string{"ignored"}, Meta: f})
	if err != nil || strings.Contains(expr, "ignored") {
		t.Fatalf("MetaSearchExpr = %s, %v", expr, err)
	}
	p, err := parseExpr(expr)
	if err != nil {
		t.Fatal(err)
	}
	web, _ := json.Marshal(rag.Metadata{"source": "web"})
	var webMeta any
	json.Unmarshal(milvusexpr.MetaJSON(rag.Metadata{"source": "web"}, 1), &webMeta)
	for _, c := range []struct {
		row  map[string]any
		want bool
	}{
		{map[string]any{"tenant": "t1", "kb_id": "kb", "meta": webMeta}, true},
		{map[string]any{"tenant": "t2", "kb_id": "kb", "meta": webMeta}, false},
		{map[string]any{"tenant": "t1", "kb_id": "kb2", "meta": webMeta}, false},
		{map[string]any{"tenant": "t1", "kb_id": "kb", "meta": nil}, true},              // null: not known yet
		{map[string]any{"tenant": "t1", "kb_id": "kb", "meta": map[string]any{}}, true}, // {}: not known yet
		{map[string]any{"tenant": "t2", "kb_id": "kb", "meta": nil}, false},
	} {
		if got, err := p.eval(c.row); err != nil || got != c.want {
			t.Errorf("%s on %v (%s) = %v, %v; want %v", expr, c.row, web, got, err, c.want)
		}
	}
}

// TestStrLiteral: any text survives as a literal (read back by strconv.Unquote, as Milvus's parser
// does) and cannot end it early.
func TestStrLiteral(t *testing.T) {
	for _, s := range append(hostile, "\x7f", "\u2028", string([]byte{0xff, 'a'})) {
		lit := milvusexpr.Str(s)
		p := &parser{}
		toks, err := tokenize(`tenant == ` + lit)
		if err != nil || len(toks) != 3 {
			t.Fatalf("%q: literal %s tokenizes as %q (%v)", s, lit, toks, err)
		}
		p.toks = toks[2:]
		got, err := p.str()
		want := strings.ToValidUTF8(s, "\uFFFD")
		if err != nil || got != want {
			t.Errorf("%q: literal %s reads back as %q, %v", s, lit, got, err)
		}
	}
	if got := milvusexpr.Str(`" or tenant != "`); got != `"\" or tenant != \""` {
		t.Errorf("Str = %s", got)
	}
}
