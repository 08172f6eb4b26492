package rag

import (
	"fmt"
	"slices"
	"testing"
)

// TestBitsOfRegistered checks that a registered restriction (the metadata index's answer, a bitset
// over the shared numbering) is translated by an index into exactly the set the id-by-id translation
// gives, without calling number, and that anything else falls back to it.
func TestBitsOfRegistered(t *testing.T) {
	// an index numbering its documents in its own order (backwards), with a non-document name between
	names := []string{"tenant-x"}
	nums := map[string]int32{"tenant-x": 0}
	for i := 99; i >= 0; i-- {
		id := fmt.Sprintf("regdoc_%d", i)
		nums[id] = int32(len(names))
		names = append(names, id)
	}
	lookups := 0
	number := func(id string) (int32, bool) { lookups++; n, ok := nums[id]; return n, ok }
	numbered := func(from int, yield func(string, int32)) {
		for n := from; n < len(names); n++ {
			yield(names[n], int32(n))
		}
	}
	register := func(ids []string) {
		bits := make([]uint64, DocNumbers()/64+2)
		for _, id := range ids {
			n := DocNumber(id)
			if n < 0 || int(n/64) >= len(bits) {
				t.Fatalf("DocNumber(%q) = %d", id, n)
			}
			bits[n/64] |= 1 << (n % 64)
		}
		RegisterRestriction(ids, bits)
	}
	var ids []string
	for i := 10; i < 60; i += 2 {
		ids = append(ids, fmt.Sprintf("regdoc_%d", i))
	}
	register(ids)
	c := NewDocBits()
	got, known, err := c.BitsOf(ids, len(names), number, numbered)
	if err != nil || !known || lookups != 0 {
		t.Fatalf("BitsOf: known %v, err %v, %d id look-ups (want none)", known, err, lookups)
	}
	want, _, _ := NewDocBits().Bits(ids, len(names), func(id string) (int32, bool) { n, ok := nums[id]; return n, ok })
	if !slices.Equal(got, want) {
		t.Fatalf("registered translation %v, id by id %v", got, want)
	}
	// the caller's slice changed in place: not the registered restriction any more
	changed := slices.Clone(ids)
	changed[0] = "regdoc_99"
	got2, _, _ := c.BitsOf(changed, len(names), number, numbered)
	if lookups == 0 || !HasBit(got2, nums["regdoc_99"]) || HasBit(got2, nums["regdoc_10"]) {
		t.Fatal("a changed slice was read from the registered bitset")
	}
	// an id the index numbers later: the registered set is translated again once it is numbered
	late := append(slices.Clone(ids[:20]), "regdoc_late")
	register(late)
	b1, _, _ := c.BitsOf(late, len(names), number, numbered)
	nums["regdoc_late"] = int32(len(names))
	names = append(names, "regdoc_late")
	if HasBit(b1, nums["regdoc_late"]) {
		t.Fatal("an id not yet numbered is in the set")
	}
	lookups = 0
	b2, _, _ := c.BitsOf(late, len(names), number, numbered)
	if !HasBit(b2, nums["regdoc_late"]) || lookups != 0 {
		t.Fatalf("after numbering it: in set %v, %d look-ups", HasBit(b2, nums["regdoc_late"]), lookups)
	}
	// a malformed id is never numbered
	if n := DocNumber("bad id\x00"); n != -1 {
		t.Fatalf("DocNumber of a malformed id = %d", n)
	}
	// an unregistered restriction with a malformed id is refused, as by Bits
	bad := append(slices.Clone(ids[:20]), "bad id\x00")
	if _, _, err := c.BitsOf(bad, len(names), number, numbered); !Is(err, KindInvalid) {
		t.Fatalf("malformed id: %v", err)
	}
	// more registrations than the registry holds: the oldest falls back to the id-by-id path, same set
	for i := range restrictionEntries + 1 {
		register(append(slices.Clone(ids[:17+i%3]), fmt.Sprintf("regdoc_%d", 90+i%8)))
	}
	lookups = 0
	c2 := NewDocBits()
	b3, _, _ := c2.BitsOf(ids, len(names), number, numbered)
	if lookups == 0 || !slices.Equal(b3[:len(want)], want) {
		t.Fatalf("evicted restriction: %d look-ups, equal %v", lookups, slices.Equal(b3[:len(want)], want))
	}
}

// BenchmarkRestrictionTranslation compares what a leg pays to turn a restriction it has not seen into
// its bitset (10,000 documents numbered, restrictions of 8,000 of them, a different one each
// iteration so that no cached translation is found): id by id (a validation and a map look-up per
// id, as before the shared numbering), from the registered answer with the index's names in a slice
// (memvec), and from it with the names in a map walked for them (BM25). Registering the answer (the
// metadata index's part: a copy of the ids) is timed in the last two.
//
//	go test ./shared/rag -run '^$' -bench RestrictionTranslation
func BenchmarkRestrictionTranslation(b *testing.B) {
	const docs, pass, sets = 10_000, 8_000, 64
	names := make([]string, docs)
	nums := map[string]int32{}
	for i := range names {
		names[i] = fmt.Sprintf("doc_bench%08d", i)
		nums[names[i]] = int32(i)
	}
	number := func(id string) (int32, bool) { n, ok := nums[id]; return n, ok }
	var restr [sets][]string
	var shared [sets][]uint64
	for s := range restr {
		for i := range pass {
			restr[s] = append(restr[s], names[(i*7+s)%docs])
		}
		slices.Sort(restr[s])
		restr[s] = slices.Compact(restr[s])
		shared[s] = make([]uint64, (docs+DocNumbers())/64+2)
		for _, id := range restr[s] {
			n := DocNumber(id)
			shared[s][n/64] |= 1 << (n % 64)
		}
	}
	bySlice := func(from int, yield func(string, int32)) {
		for n := from; n < len(names); n++ {
			yield(names[n], int32(n))
		}
	}
	byMap := func(from int, yield func(string, int32)) {
		for id, n := range nums {
			if int(n) >= from {
				yield(id, n)
			}
		}
	}
	b.Run("ids", func(b *testing.B) {
		c, i := NewDocBits(), 0
		for b.Loop() {
			if _, _, err := c.Bits(restr[i%sets], docs, number); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	for name, numbered := range map[string]func(int, func(string, int32)){"registered-slice": bySlice, "registered-map": byMap} {
		b.Run(name, func(b *testing.B) {
			c, i := NewDocBits(), 0
			for b.Loop() {
				s := i % sets
				RegisterRestriction(restr[s], shared[s])
				if _, _, err := c.BitsOf(restr[s], docs, number, numbered); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// Concurrent searches translating registered answers while others are registered, through one
// DocBits: every translation equals the id-by-id one (run with -race).
func TestBitsOfConcurrent(t *testing.T) {
	var names []string
	nums := map[string]int32{}
	for i := range 500 {
		id := fmt.Sprintf("concdoc_%d", i)
		nums[id] = int32(i)
		names = append(names, id)
	}
	c := NewDocBits()
	var sets [][]string
	var bitsets [][]uint64
	for s := range 24 {
		var ids []string
		for i := s; i < 500; i += 1 + s%5 {
			ids = append(ids, names[i])
		}
		bits := make([]uint64, (DocNumbers()+600)/64+1)
		for _, id := range ids {
			n := DocNumber(id)
			bits[n/64] |= 1 << (n % 64)
		}
		sets, bitsets = append(sets, ids), append(bitsets, bits)
	}
	number := func(id string) (int32, bool) { n, ok := nums[id]; return n, ok }
	numbered := func(from int, yield func(string, int32)) {
		for n := from; n < len(names); n++ {
			yield(names[n], int32(n))
		}
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			for k := range 200 {
				s := (g*7 + k) % len(sets)
				RegisterRestriction(sets[s], bitsets[s])
				got, _, err := c.BitsOf(sets[s], len(names), number, numbered)
				if err != nil {
					done <- err
					return
				}
				want, _, _ := NewDocBits().Bits(sets[s], len(names), number)
				if !slices.Equal(got[:len(want)], want) {
					done <- fmt.Errorf("restriction %d translated to another set", s)
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
