package rag

import (
	"strconv"
	"strings"
	"time"
)

// CacheKey is a canonical text of the filter: two filters with the same key select the same documents
// (same tree, same values; numbers and dates in one spelling). The metadata index keys its answers on
// it, so the same filter asked again, by whatever request and JSON spelling, is not evaluated again.
func (f *MetaFilter) CacheKey() string {
	var b strings.Builder
	f.writeKey(&b)
	return b.String()
}

func (f *MetaFilter) writeKey(b *strings.Builder) {
	list := func(op string, subs []*MetaFilter) {
		b.WriteString(op)
		b.WriteByte('(')
		for i, s := range subs {
			if i > 0 {
				b.WriteByte(',')
			}
			s.writeKey(b)
		}
		b.WriteByte(')')
	}
	switch {
	case f == nil:
		b.WriteString("all")
		return
	case f.And != nil:
		list("and", f.And)
		return
	case f.Or != nil:
		list("or", f.Or)
		return
	case f.Not != nil:
		b.WriteString("not(")
		f.Not.writeKey(b)
		b.WriteByte(')')
		return
	}
	b.WriteString(strconv.Quote(f.Key))
	switch {
	case f.Exists != nil:
		b.WriteString(" exists ")
		b.WriteString(strconv.FormatBool(*f.Exists))
	case f.Eq != nil:
		b.WriteString(" eq ")
		writeKeyValue(b, f.Eq)
	case f.In != nil:
		b.WriteString(" in ")
		for _, v := range f.In {
			writeKeyValue(b, v)
			b.WriteByte(' ')
		}
	default:
		for _, bd := range []*bound{f.Lower, f.Upper} {
			b.WriteByte(' ')
			if bd == nil {
				b.WriteByte('*')
				continue
			}
			if bd.inclusive {
				b.WriteByte('=')
			}
			if bd.isDate {
				b.WriteString("d" + bd.date.UTC().Format(time.RFC3339Nano))
			} else {
				b.WriteString("n" + strconv.FormatFloat(bd.num, 'g', -1, 64))
			}
		}
	}
}

func writeKeyValue(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		b.WriteString(strconv.Quote(x))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	}
}

// Inclusive reports whether a range bound includes its value (gte, lte).
func (b *bound) Inclusive() bool { return b.inclusive }

// IsDate reports whether the bound is a date (else a number).
func (b *bound) IsDate() bool { return b.isDate }

// Number is a number bound's value.
func (b *bound) Number() float64 { return b.num }

// Date is a date bound's instant (UTC).
func (b *bound) Date() time.Time { return b.date }
