package rag

import "slices"

// MetaKeys numbers metadata keys for one set of documents (a tenant's, in the metadata index), so that
// a prepared document holds its values in a short slice searched by number rather than in a map: a
// filter judged over every document of a tenant per query spends its time in these look-ups. Not safe
// for concurrent use: the index guards it with the tenant's lock.
type MetaKeys struct {
	ids map[string]int32
}

// NewMetaKeys returns an empty numbering.
func NewMetaKeys() *MetaKeys { return &MetaKeys{ids: map[string]int32{}} }

// MetaDoc is one document's metadata prepared for judging many filters: keys numbered by a MetaKeys,
// dates parsed once instead of on every range comparison. The zero value is empty metadata.
type MetaDoc struct {
	keys []int32 // ascending
	vals []metaVal
}

type metaVal struct {
	s      string
	n      float64
	list   []string
	kind   uint8 // valString, valNumber or valList
	isDate bool  // s reads as a date: sec and nsec hold it
	nsec   int32
	sec    int64
}

const (
	valString uint8 = iota + 1
	valNumber
	valList
)

// Prepare prepares normalised metadata (Metadata.Normalize) for a MetaMatcher compiled with k; values
// of another type stay present but match no condition but exists, as with Match.
func (k *MetaKeys) Prepare(m Metadata) MetaDoc {
	if len(m) == 0 {
		return MetaDoc{}
	}
	d := MetaDoc{keys: make([]int32, 0, len(m)), vals: make([]metaVal, 0, len(m))}
	for name, v := range m {
		id, ok := k.ids[name]
		if !ok {
			id = int32(len(k.ids))
			k.ids[name] = id
		}
		var mv metaVal
		switch x := v.(type) {
		case string:
			mv = metaVal{kind: valString, s: x}
			if t, ok := ParseMetaDate(x); ok {
				mv.isDate, mv.sec, mv.nsec = true, t.Unix(), int32(t.Nanosecond())
			}
		case float64:
			mv = metaVal{kind: valNumber, n: x}
		case []string:
			mv = metaVal{kind: valList, list: x}
		}
		i, _ := slices.BinarySearch(d.keys, id)
		d.keys = slices.Insert(d.keys, i, id)
		d.vals = slices.Insert(d.vals, i, mv)
	}
	return d
}

// get returns the value of key number id.
func (d MetaDoc) get(id int32) (metaVal, bool) {
	for i, k := range d.keys { // a document has a few keys: a linear scan beats a bisection
		if k == id {
			return d.vals[i], true
		}
		if k > id {
			break
		}
	}
	return metaVal{}, false
}

// Size estimates the bytes the prepared metadata holds, for the metadata index's memory bound.
func (d MetaDoc) Size() int {
	n := 48
	for _, v := range d.vals {
		n += 68 + len(v.s)
		for _, s := range v.list {
			n += len(s) + 16
		}
	}
	return n
}

// MetaMatcher is a filter compiled against a MetaKeys: Match judges a prepared document exactly as
// MetaFilter.Match judges its metadata (TestMatchPreparedAgrees).
type MetaMatcher struct {
	f   *MetaFilter
	key int32 // -1: a key no document has
	sub []*MetaMatcher
}

// Compile resolves the filter's keys against k. Compile again after k gains keys that the filter
// names (the metadata index compiles per query).
func (f *MetaFilter) Compile(k *MetaKeys) *MetaMatcher {
	if f == nil {
		return nil
	}
	m := &MetaMatcher{f: f, key: -1}
	if id, ok := k.ids[f.Key]; ok && f.Key != "" {
		m.key = id
	}
	for _, s := range f.And {
		m.sub = append(m.sub, s.Compile(k))
	}
	for _, s := range f.Or {
		m.sub = append(m.sub, s.Compile(k))
	}
	if f.Not != nil {
		m.sub = append(m.sub, f.Not.Compile(k))
	}
	return m
}

// Match reports whether the prepared document passes; a nil matcher passes everything.
func (m *MetaMatcher) Match(d MetaDoc) bool {
	if m == nil {
		return true
	}
	f := m.f
	switch {
	case f.And != nil:
		for _, s := range m.sub {
			if !s.Match(d) {
				return false
			}
		}
		return true
	case f.Or != nil:
		for _, s := range m.sub {
			if s.Match(d) {
				return true
			}
		}
		return false
	case f.Not != nil:
		return !m.sub[0].Match(d)
	}
	var v metaVal
	present := false
	if m.key >= 0 {
		v, present = d.get(m.key)
	}
	switch {
	case f.Exists != nil:
		return present == *f.Exists
	case !present:
		return false
	case f.Eq != nil:
		return v.equals(f.Eq)
	case f.In != nil:
		for _, want := range f.In {
			if v.equals(want) {
				return true
			}
		}
		return false
	}
	return v.inRange(f.Lower, true) && v.inRange(f.Upper, false)
}

func (v metaVal) equals(want any) bool {
	switch v.kind {
	case valString:
		w, ok := want.(string)
		return ok && v.s == w
	case valNumber:
		w, ok := want.(float64)
		return ok && v.n == w
	case valList:
		w, ok := want.(string)
		return ok && slices.Contains(v.list, w)
	}
	return false
}

func (v metaVal) inRange(b *bound, lower bool) bool {
	if b == nil {
		return true
	}
	var c int
	switch {
	case b.isDate:
		if !v.isDate {
			return false
		}
		bs, bn := b.date.Unix(), int32(b.date.Nanosecond())
		switch {
		case v.sec < bs || v.sec == bs && v.nsec < bn:
			c = -1
		case v.sec > bs || v.nsec > bn:
			c = 1
		}
	default:
		if v.kind != valNumber {
			return false
		}
		switch {
		case v.n < b.num:
			c = -1
		case v.n > b.num:
			c = 1
		}
	}
	if lower {
		return c > 0 || (c == 0 && b.inclusive)
	}
	return c < 0 || (c == 0 && b.inclusive)
}
