package bm25

// Add as it was before the one-pass analyzer (a term slice per field, a map per chunk, terms sorted
// per chunk), kept as the reference the index Add builds must match.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func refTermFreqs(content, context string, p Params) (map[string]float32, float32) {
	return Analyze(content, context).Weighted(p)
}

// Add indexes docs, replacing any with the same (tenant, id).
func (ix *Index) refAdd(docs ...Doc) {
	type prepared struct {
		d   Doc
		tf  map[string]float32
		len float32
	}
	ps := make([]prepared, len(docs))
	for i, d := range docs { // analysis outside the lock
		tf, n := refTermFreqs(d.Content, d.Context, ix.p)
		ps[i] = prepared{d, tf, n}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, p := range ps {
		k := p.d.Tenant + "\x00" + p.d.ID
		if at, ok := ix.byID[k]; ok {
			ix.kill(at)
		}
		at := int32(len(ix.entries))
		e := entry{id: p.d.ID, tenant: p.d.Tenant, kb: p.d.KBID, doc: p.d.DocumentID, length: p.len}
		terms := make([]string, 0, len(p.tf))
		for t := range p.tf {
			terms = append(terms, t)
		}
		slices.Sort(terms) // deterministic term ids
		var ids []int32
		for _, t := range terms {
			id, ok := ix.dict[t]
			if !ok {
				id = int32(len(ix.postings))
				ix.dict[t] = id
				ix.postings = append(ix.postings, nil)
				ix.df = append(ix.df, 0)
			}
			ix.postings[id] = append(ix.postings[id], posting{at, p.tf[t]})
			ix.df[id]++
			ids = append(ids, id)
		}
		e.terms = packTerms(ids)
		ix.entries = append(ix.entries, e)
		ix.lens = append(ix.lens, p.len)
		ix.byID[k] = at
		ix.live++
		ix.totalLen += float64(p.len)
	}
	ix.maybeCompact()
}

func synthDocs(n int, seed uint64) []Doc {
	r := rand.New(rand.NewPCG(seed, seed+1))
	words := make([]string, 20000)
	for i := range words {
		var w strings.Builder
		for range 4 + r.IntN(6) {
			w.WriteByte(byte('a' + r.IntN(26)))
		}
		words[i] = w.String()
	}
	words = append(words, "v1.2.3", "server.shutdown", "don't", "投保年龄", "保险", "Running", "THE", "it's", "IL-6")
	z := rand.NewZipf(r, 1.1, 2, uint64(len(words)-1))
	sent := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = words[z.Uint64()]
		}
		return strings.Join(ws, " ") + "."
	}
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprintf("c%07d", i%(n-n/20)), Tenant: "t", KBID: "k", DocumentID: "d",
			Content: "# Title " + sent(3) + "\n## " + sent(2) + "\n\n" + sent(28) + " " + sent(30)}
		if i%3 == 0 {
			docs[i].Context = "# Parent\n\n" + sent(40)
		}
	}
	return docs
}

// postingsOf maps each live entry's chunk id to its term -> weighted tf, and its length.
func postingsOf(ix *Index) (map[string]map[string]float32, map[string]float32) {
	terms := make([]string, len(ix.postings))
	for t, id := range ix.dict {
		terms[id] = t
	}
	tf := map[string]map[string]float32{}
	lens := map[string]float32{}
	for id, ps := range ix.postings {
		for _, p := range ps {
			e := ix.entries[p.doc]
			if e.dead {
				continue
			}
			if tf[e.id] == nil {
				tf[e.id] = map[string]float32{}
			}
			tf[e.id][terms[id]] = p.tf
			lens[e.id] = e.length
		}
	}
	return tf, lens
}

// Add builds the index the reference builds: the same live chunks with the same weighted term
// frequencies, lengths, document frequencies and statistics (term ids may differ), in one large batch
// (parallel analysis, grown postings) and in small ones; replacements included (ids repeat).
func TestAddMatchesReference(t *testing.T) {
	p := Params{K1: 0.9, B: 0.4, TitleWeight: 2, ContextWeight: 0.3}
	docs := synthDocs(3000, 5)
	want := New(p)
	want.refAdd(docs...)
	for _, batch := range []int{len(docs), 7} {
		got := New(p)
		for from := 0; from < len(docs); from += batch {
			got.Add(docs[from:min(from+batch, len(docs))]...)
		}
		gtf, glen := postingsOf(got)
		wtf, wlen := postingsOf(want)
		if len(gtf) != len(wtf) || got.live != want.live || got.totalLen != want.totalLen {
			t.Fatalf("batch %d: %d chunks, live %d, total %v; reference %d, %d, %v", batch, len(gtf), got.live, got.totalLen, len(wtf), want.live, want.totalLen)
		}
		for id, w := range wtf {
			if !maps.Equal(gtf[id], w) || glen[id] != wlen[id] {
				t.Fatalf("batch %d: chunk %s: %v (len %v), reference %v (len %v)", batch, id, gtf[id], glen[id], w, wlen[id])
			}
		}
		for term, wid := range want.dict {
			if gid, ok := got.dict[term]; !ok || got.df[gid] != want.df[wid] {
				t.Fatalf("batch %d: df of %q differs", batch, term)
			}
		}
	}
}

// BenchmarkAddVsReference times Add and the reference interleaved on the same 32k chunks and reports
// their ratio (a loaded machine slows both alike).
func BenchmarkAddVsReference(b *testing.B) {
	docs := synthDocs(32000, 21)
	p := Params{K1: 0.9, B: 0.4, TitleWeight: 1}
	var ours, ref []time.Duration
	for b.Loop() {
		start := time.Now()
		New(p).Add(docs...)
		ours = append(ours, time.Since(start))
		start = time.Now()
		New(p).refAdd(docs...)
		ref = append(ref, time.Since(start))
	}
	slices.Sort(ours)
	slices.Sort(ref)
	b.ReportMetric(float64(ref[len(ref)/2])/float64(ours[len(ours)/2]), "x-faster")
	b.ReportMetric(float64(len(docs))/ours[len(ours)/2].Seconds(), "docs/s")
}
