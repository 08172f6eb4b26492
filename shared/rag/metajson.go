package rag

import (
	"encoding/json"
	"time"
)

// MarshalJSON writes the filter in its one JSON form (the form ParseMetaFilter reads), so that a parsed
// filter can travel inside a JSON state (answer.Request.Filter, the answer state machine's input) and
// be read back as the same filter: dates as RFC 3339 in UTC, numbers as JSON numbers.
func (f MetaFilter) MarshalJSON() ([]byte, error) {
	return json.Marshal(f.form())
}

// UnmarshalJSON reads the filter with ParseMetaFilter's rules (a malformed filter is refused with the
// path of the bad node), so a state carrying one is held to the same validation as a request.
func (f *MetaFilter) UnmarshalJSON(raw []byte) error {
	parsed, err := ParseMetaFilter(raw)
	if err != nil {
		return err
	}
	if parsed == nil {
		*f = MetaFilter{}
		return nil
	}
	*f = *parsed
	return nil
}

// form is the filter as generic JSON values, one node at a time.
func (f *MetaFilter) form() map[string]any {
	switch {
	case f.And != nil:
		return map[string]any{"and": forms(f.And)}
	case f.Or != nil:
		return map[string]any{"or": forms(f.Or)}
	case f.Not != nil:
		return map[string]any{"not": f.Not.form()}
	}
	out := map[string]any{"key": f.Key}
	switch {
	case f.Exists != nil:
		out["exists"] = *f.Exists
	case f.Eq != nil:
		out["eq"] = f.Eq
	case f.In != nil:
		out["in"] = f.In
	default:
		if f.Lower != nil {
			out[boundOp("gt", f.Lower)] = f.Lower.value()
		}
		if f.Upper != nil {
			out[boundOp("lt", f.Upper)] = f.Upper.value()
		}
	}
	return out
}

func forms(subs []*MetaFilter) []map[string]any {
	out := make([]map[string]any, len(subs))
	for i, s := range subs {
		out[i] = s.form()
	}
	return out
}

func boundOp(op string, b *bound) string {
	if b.inclusive {
		return op + "e"
	}
	return op
}

func (b *bound) value() any {
	if b.isDate {
		return b.date.UTC().Format(time.RFC3339Nano)
	}
	return b.num
}
