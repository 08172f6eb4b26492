package milvusexpr

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// FieldMeta is the JSON field holding each row's copy of its document's metadata (issue #23), laid
// out by value kind so that a filter translates to typed comparisons (MetaJSON):
//
//	{"v": 1, "g": generation, "k": [keys], "s": {key: string}, "n": {key: number},
//	 "l": {key: [strings]}, "d": {key: milliseconds since 1970 of a string that reads as a date}}
//
// A row whose document's metadata is not known to be in step (written by Upsert, before the
// document's metadata was mirrored, or a row from before the field existed: {} or null) has no "v".
const FieldMeta = "meta"

// MetaFormat is the layout's version, "v" in the field.
const MetaFormat = 1

// MetaJSON is the field's value for a document's normalised metadata (rag.Metadata.Normalize) at
// metadata generation gen (the SQL generation the copy was read at; a mirror never overwrites a
// newer copy). Dates keep millisecond precision ("d").
func MetaJSON(m rag.Metadata, gen int64) []byte {
	type layout struct {
		V int                 `json:"v"`
		G int64               `json:"g"`
		K []string            `json:"k"`
		S map[string]string   `json:"s,omitempty"`
		N map[string]float64  `json:"n,omitempty"`
		L map[string][]string `json:"l,omitempty"`
		D map[string]int64    `json:"d,omitempty"`
	}
	out := layout{V: MetaFormat, G: gen, K: []string{}}
	for k, v := range m {
		out.K = append(out.K, k)
		switch x := v.(type) {
		case string:
			if out.S == nil {
				out.S = map[string]string{}
			}
			out.S[k] = x
			if t, ok := rag.ParseMetaDate(x); ok {
				if out.D == nil {
					out.D = map[string]int64{}
				}
				out.D[k] = t.UnixMilli()
			}
		case float64:
			if out.N == nil {
				out.N = map[string]float64{}
			}
			out.N[k] = x
		case []string:
			if out.L == nil {
				out.L = map[string][]string{}
			}
			out.L[k] = x
		}
	}
	slices.Sort(out.K)
	b, _ := json.Marshal(out) // strings, numbers and maps of them: cannot fail
	return b
}

// EmptyMeta is the field's value on a row written without its document's metadata: not in step.
var EmptyMeta = []byte("{}")

// Str renders any text as a Milvus string literal: a backslash and a double quote are escaped,
// control characters written as \u00XX, anything else kept as UTF-8 (invalid bytes become U+FFFD, as
// they do in the stored JSON). Metadata keys and values are untrusted (a document's front matter, a
// request's filter): nothing in them can end the literal or start an operator.
func Str(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r) // utf8.RuneError for an invalid byte: U+FFFD
		}
	}
	b.WriteByte('"')
	return b.String()
}

// num renders a finite number as a Milvus floating literal (always with a point or an exponent, so
// Milvus compares as doubles, as the stored JSON numbers are).
func num(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// path is the JSON path of key in one of the layout's kinds ("s", "n", "l", "d", or "k" itself).
func path(kind, key string) string {
	if kind == "k" {
		return FieldMeta + `["k"]`
	}
	return FieldMeta + `["` + kind + `"][` + Str(key) + `]`
}

// rangeBound is a range filter's bound (rag.MetaFilter.Lower, Upper).
type rangeBound interface {
	Inclusive() bool
	IsDate() bool
	Number() float64
	Date() time.Time
}

// MetaExpr translates a metadata filter into a Milvus boolean expression over FieldMeta that holds
// exactly for the rows whose metadata (as MetaJSON wrote it) passes f (rag.MetaFilter.Match; dates
// compared to the millisecond). Every comparison is guarded by exists on its path, so a missing key
// is false whether the server's logic is two- or three-valued, and "not" inverts it cleanly. Invalid
// for a nil filter.
func MetaExpr(f *rag.MetaFilter) (string, error) {
	if f == nil {
		return "", rag.Errorf("milvusexpr.MetaExpr", rag.KindInvalid, "no filter")
	}
	var b strings.Builder
	metaExpr(&b, f)
	return b.String(), nil
}

func metaExpr(b *strings.Builder, f *rag.MetaFilter) {
	join := func(op string, subs []*rag.MetaFilter) {
		b.WriteByte('(')
		for i, s := range subs {
			if i > 0 {
				b.WriteString(" " + op + " ")
			}
			metaExpr(b, s)
		}
		b.WriteByte(')')
	}
	guarded := func(p, cond string) string { return "(exists " + p + " and " + cond + ")" }
	switch {
	case f.And != nil:
		join("and", f.And)
		return
	case f.Or != nil:
		join("or", f.Or)
		return
	case f.Not != nil:
		b.WriteString("(not ")
		metaExpr(b, f.Not)
		b.WriteByte(')')
		return
	}
	s, n, l := path("s", f.Key), path("n", f.Key), path("l", f.Key)
	var alts []string
	switch {
	case f.Exists != nil:
		has := guarded(path("k", f.Key), "json_contains("+path("k", f.Key)+", "+Str(f.Key)+")")
		if !*f.Exists {
			has = "(not " + has + ")"
		}
		b.WriteString(has)
		return
	case f.Eq != nil || f.In != nil:
		vals := f.In
		if f.Eq != nil {
			vals = []any{f.Eq}
		}
		var strs, nums []string
		for _, v := range vals {
			switch x := v.(type) {
			case string:
				strs = append(strs, Str(x))
			case float64:
				nums = append(nums, num(x))
			}
		}
		if len(strs) == 1 {
			alts = append(alts, guarded(s, s+" == "+strs[0]), guarded(l, "json_contains("+l+", "+strs[0]+")"))
		} else if len(strs) > 1 {
			list := "[" + strings.Join(strs, ", ") + "]"
			alts = append(alts, guarded(s, s+" in "+list), guarded(l, "json_contains_any("+l+", "+list+")"))
		}
		if len(nums) == 1 {
			alts = append(alts, guarded(n, n+" == "+nums[0]))
		} else if len(nums) > 1 {
			alts = append(alts, guarded(n, n+" in ["+strings.Join(nums, ", ")+"]"))
		}
	default: // a range: both bounds of one kind (ParseMetaFilter)
		p, isDate := n, (f.Lower != nil && f.Lower.IsDate()) || (f.Upper != nil && f.Upper.IsDate())
		if isDate {
			p = path("d", f.Key)
		}
		cond := func(b rangeBound, strict, inclusive string) string {
			op := strict
			if b.Inclusive() {
				op = inclusive
			}
			if isDate {
				return p + op + strconv.FormatInt(b.Date().UnixMilli(), 10)
			}
			return p + op + num(b.Number())
		}
		var conds []string
		if f.Lower != nil {
			conds = append(conds, cond(f.Lower, " > ", " >= "))
		}
		if f.Upper != nil {
			conds = append(conds, cond(f.Upper, " < ", " <= "))
		}
		alts = append(alts, guarded(p, strings.Join(conds, " and ")))
	}
	if len(alts) == 1 {
		b.WriteString(alts[0])
		return
	}
	b.WriteString("(" + strings.Join(alts, " or ") + ")")
}

// MetaSearchExpr is the expression of a search restricted by a metadata filter instead of a list of
// document ids: f's tenant, knowledge bases and tags (its DocumentIDs are not used), and rows whose
// metadata is in step and passes f.Meta, or whose metadata is not known (no "v": written before it
// was mirrored, or from before the field existed). It selects a superset of the filter's documents;
// the caller checks the hits against the filter's resolved documents (milvus.Index.Search).
func MetaSearchExpr(f rag.Filter) (string, error) {
	scope := f
	scope.DocumentIDs = nil
	base, err := Expr(scope)
	if err != nil {
		return "", err
	}
	m, err := MetaExpr(f.Meta)
	if err != nil {
		return "", err
	}
	v := FieldMeta + `["v"]`
	return base + " and ((exists " + v + " and " + v + " == " + strconv.Itoa(MetaFormat) + " and " + m + ") or (not exists " + v + ") or " + FieldMeta + " is null)", nil
}
