package rag

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Metadata is a document's key/value metadata (issue #23): each value is a string, a number, a date
// (a string in YYYY-MM-DD or RFC 3339 form) or a list of strings. It comes from the document's source
// (connector fields, front matter, sidecars) and from derived fields (source, author, modified,
// language).
type Metadata map[string]any

// Metadata limits: a document's metadata and a filter stay small enough to live in a row and a
// request.
const (
	MaxMetaKeys      = 64
	MaxMetaValueLen  = 1024
	MaxMetaListLen   = 100
	MaxFilterNodes   = 100
	MaxFilterDepth   = 8
	MaxFilterInItems = 100
)

// ValidMetaKey accepts 1-64 bytes of [A-Za-z0-9_.-]: a key is placed in filter expressions.
func ValidMetaKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// Normalize checks m and returns it with numbers as float64 and lists as []string: Invalid naming
// every bad key or value.
func (m Metadata) Normalize() (Metadata, error) {
	out := make(Metadata, len(m))
	var probs []string
	if len(m) > MaxMetaKeys {
		probs = append(probs, fmt.Sprintf("more than %d keys", MaxMetaKeys))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !ValidMetaKey(k) {
			probs = append(probs, fmt.Sprintf("key %q must be 1-64 characters of A-Z a-z 0-9 _ . -", truncate(k, 80)))
			continue
		}
		switch v := m[k].(type) {
		case string:
			if len(v) > MaxMetaValueLen {
				v = v[:MaxMetaValueLen]
			}
			out[k] = v
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				probs = append(probs, fmt.Sprintf("%s: not a finite number", k))
				continue
			}
			out[k] = v
		case int:
			out[k] = float64(v)
		case int64:
			out[k] = float64(v)
		case json.Number:
			f, err := v.Float64()
			if err != nil {
				probs = append(probs, fmt.Sprintf("%s: %v", k, err))
				continue
			}
			out[k] = f
		case nil:
			continue // null is no value: the key is absent
		case []string:
			out[k] = append([]string{}, v...) // never null in JSON
		case []any:
			list := make([]string, 0, len(v))
			ok := true
			for _, e := range v {
				s, isStr := e.(string)
				if !isStr {
					ok = false
					break
				}
				list = append(list, s)
			}
			if !ok {
				probs = append(probs, fmt.Sprintf("%s: a list holds strings only", k))
				continue
			}
			out[k] = list
		default:
			probs = append(probs, fmt.Sprintf("%s: a value is a string, a number, a date or a list of strings", k))
			continue
		}
		if l, ok := out[k].([]string); ok && len(l) > MaxMetaListLen {
			out[k] = l[:MaxMetaListLen]
		}
	}
	if len(probs) > 0 {
		return nil, Errorf("rag.Metadata", KindInvalid, "metadata: %s", strings.Join(probs, "; "))
	}
	return out, nil
}

// MetaFilter is a filter over document metadata, one JSON form everywhere:
//
//	{"key":K,"eq":V}  {"key":K,"in":[V,...]}  {"key":K,"gte":V,"lt":V} (gt, gte, lt, lte: numbers or dates)
//	{"key":K,"exists":true}  {"and":[F,...]}  {"or":[F,...]}  {"not":F}
//
// eq and in match a string, a number, or a member of a list of strings. A range compares numbers with
// numbers and dates with dates; a value of another kind does not match. Build one with ParseMetaFilter.
type MetaFilter struct {
	Key    string
	Eq     any   // string or float64
	In     []any // strings or float64s
	Lower  *bound
	Upper  *bound
	Exists *bool
	And    []*MetaFilter
	Or     []*MetaFilter
	Not    *MetaFilter
}

type bound struct {
	inclusive bool
	num       float64
	date      time.Time
	isDate    bool
}

// Keys returns the keys the filter names anywhere in it, sorted, each once.
func (f *MetaFilter) Keys() []string {
	var out []string
	var walk func(*MetaFilter)
	walk = func(f *MetaFilter) {
		if f == nil {
			return
		}
		if f.Key != "" {
			out = append(out, f.Key)
		}
		for _, s := range append(slices.Clone(f.And), f.Or...) {
			walk(s)
		}
		walk(f.Not)
	}
	walk(f)
	slices.Sort(out)
	return slices.Compact(out)
}

// ParseMetaFilter reads and validates a filter; Invalid with the reason (and the path of the bad node)
// for anything else than the forms above. An empty or null body is no filter (nil, nil).
func ParseMetaFilter(raw []byte) (*MetaFilter, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	nodes := 0
	f, err := parseNode(raw, "filter", 1, &nodes)
	if err != nil {
		return nil, E("rag.ParseMetaFilter", KindInvalid, err)
	}
	return f, nil
}

func parseNode(raw []byte, at string, depth int, nodes *int) (*MetaFilter, error) {
	if depth > MaxFilterDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d", at, MaxFilterDepth)
	}
	if *nodes++; *nodes > MaxFilterNodes {
		return nil, fmt.Errorf("%s: more than %d conditions", at, MaxFilterNodes)
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%s: a filter is a JSON object", at)
	}
	f := &MetaFilter{}
	has := func(k string) bool { _, ok := obj[k]; return ok }
	switch {
	case has("and") || has("or"):
		op := "and"
		if has("or") {
			op = "or"
		}
		if len(obj) != 1 {
			return nil, fmt.Errorf("%s: %q stands alone", at, op)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(obj[op], &list); err != nil || len(list) == 0 {
			return nil, fmt.Errorf("%s.%s: a non-empty list of filters", at, op)
		}
		for i, r := range list {
			sub, err := parseNode(r, fmt.Sprintf("%s.%s[%d]", at, op, i), depth+1, nodes)
			if err != nil {
				return nil, err
			}
			if op == "and" {
				f.And = append(f.And, sub)
			} else {
				f.Or = append(f.Or, sub)
			}
		}
		return f, nil
	case has("not"):
		if len(obj) != 1 {
			return nil, fmt.Errorf("%s: \"not\" stands alone", at)
		}
		sub, err := parseNode(obj["not"], at+".not", depth+1, nodes)
		if err != nil {
			return nil, err
		}
		f.Not = sub
		return f, nil
	}
	if err := json.Unmarshal(obj["key"], &f.Key); err != nil || !ValidMetaKey(f.Key) {
		return nil, fmt.Errorf("%s: \"key\" must be 1-64 characters of A-Z a-z 0-9 _ . -", at)
	}
	ops := 0
	for k, v := range obj {
		switch k {
		case "key":
		case "eq":
			ops++
			val, err := scalar(v)
			if err != nil {
				return nil, fmt.Errorf("%s.eq: %v", at, err)
			}
			f.Eq = val
		case "in":
			ops++
			var list []json.RawMessage
			if err := json.Unmarshal(v, &list); err != nil || len(list) == 0 || len(list) > MaxFilterInItems {
				return nil, fmt.Errorf("%s.in: a list of 1-%d strings or numbers", at, MaxFilterInItems)
			}
			for _, e := range list {
				val, err := scalar(e)
				if err != nil {
					return nil, fmt.Errorf("%s.in: %v", at, err)
				}
				f.In = append(f.In, val)
			}
		case "gt", "gte", "lt", "lte":
			ops++
			b, err := parseBound(v, strings.HasSuffix(k, "e"))
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %v", at, k, err)
			}
			if k[0] == 'g' {
				if f.Lower != nil {
					return nil, fmt.Errorf("%s: gt and gte together", at)
				}
				f.Lower = b
			} else {
				if f.Upper != nil {
					return nil, fmt.Errorf("%s: lt and lte together", at)
				}
				f.Upper = b
			}
		case "exists":
			ops++
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				return nil, fmt.Errorf("%s.exists: true or false", at)
			}
			f.Exists = &b
		default:
			return nil, fmt.Errorf("%s: unknown field %q (key, eq, in, gt, gte, lt, lte, exists, and, or, not)", at, truncate(k, 40))
		}
	}
	rangeOps := 0
	if f.Lower != nil {
		rangeOps++
	}
	if f.Upper != nil {
		rangeOps++
	}
	switch {
	case ops == 0:
		return nil, fmt.Errorf("%s: a condition on %q needs eq, in, a range or exists", at, f.Key)
	case rangeOps > 0 && ops != rangeOps:
		return nil, fmt.Errorf("%s: a range stands alone with its key", at)
	case rangeOps == 0 && ops > 1:
		return nil, fmt.Errorf("%s: one of eq, in or exists per condition (combine with and)", at)
	case rangeOps == 2 && f.Lower.isDate != f.Upper.isDate:
		return nil, fmt.Errorf("%s: a range's bounds are both numbers or both dates", at)
	}
	return f, nil
}

// scalar reads a string or a number.
func scalar(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON")
	}
	switch x := v.(type) {
	case string:
		if len(x) > MaxMetaValueLen {
			return nil, fmt.Errorf("a value is at most %d bytes", MaxMetaValueLen)
		}
		return x, nil
	case json.Number:
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s is not a finite number", x)
		}
		return f, nil
	}
	return nil, fmt.Errorf("a value is a string or a number")
}

func parseBound(raw json.RawMessage, inclusive bool) (*bound, error) {
	v, err := scalar(raw)
	if err != nil {
		return nil, err
	}
	b := &bound{inclusive: inclusive}
	switch x := v.(type) {
	case float64:
		b.num = x
	case string:
		t, ok := ParseMetaDate(x)
		if !ok {
			return nil, fmt.Errorf("%q is neither a number nor a date (YYYY-MM-DD or RFC 3339)", truncate(x, 40))
		}
		b.date, b.isDate = t, true
	}
	return b, nil
}

// ParseMetaDate reads a metadata date: YYYY-MM-DD (midnight UTC) or RFC 3339.
func ParseMetaDate(s string) (time.Time, bool) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), true
	}
	return time.Time{}, false
}

// Match reports whether a document with metadata m passes the filter; a nil filter passes everything.
func (f *MetaFilter) Match(m Metadata) bool {
	switch {
	case f == nil:
		return true
	case f.And != nil:
		for _, s := range f.And {
			if !s.Match(m) {
				return false
			}
		}
		return true
	case f.Or != nil:
		for _, s := range f.Or {
			if s.Match(m) {
				return true
			}
		}
		return false
	case f.Not != nil:
		return !f.Not.Match(m)
	}
	v, present := m[f.Key]
	switch {
	case f.Exists != nil:
		return present == *f.Exists
	case !present:
		return false
	case f.Eq != nil:
		return equals(v, f.Eq)
	case f.In != nil:
		for _, want := range f.In {
			if equals(v, want) {
				return true
			}
		}
		return false
	}
	return inRange(v, f.Lower, true) && inRange(v, f.Upper, false)
}

func equals(have, want any) bool {
	switch h := have.(type) {
	case string:
		w, ok := want.(string)
		return ok && h == w
	case float64:
		w, ok := want.(float64)
		return ok && h == w
	case []string:
		w, ok := want.(string)
		return ok && slices.Contains(h, w)
	}
	return false
}

// inRange compares v with one bound (nil: no bound).
func inRange(v any, b *bound, lower bool) bool {
	if b == nil {
		return true
	}
	var c int
	switch {
	case b.isDate:
		s, ok := v.(string)
		if !ok {
			return false
		}
		t, ok := ParseMetaDate(s)
		if !ok {
			return false
		}
		c = t.Compare(b.date)
	default:
		n, ok := v.(float64)
		if !ok {
			return false
		}
		switch {
		case n < b.num:
			c = -1
		case n > b.num:
			c = 1
		}
	}
	if lower {
		return c > 0 || (c == 0 && b.inclusive)
	}
	return c < 0 || (c == 0 && b.inclusive)
}
