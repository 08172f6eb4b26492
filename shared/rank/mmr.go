package rank

import "math"

// MMR reorders evidence (best first) for diversity and returns at most k: each pick maximises
// lambda*relevance - (1-lambda)*max similarity to what is already picked. Similarity is the cosine of
// the embeddings when both items have one, else the bigram Jaccard of their child texts. Relevance is
// the score scaled to [0,1] by the top score. lambda is clamped to [0,1] (default 0.7 for values < 0
// is not assumed: the caller passes DESIGN's 0.7).
func MMR(ev []Evidence, k int, lambda float64) []Evidence {
	lambda = math.Max(0, math.Min(1, lambda))
	if k <= 0 || len(ev) == 0 {
		return nil
	}
	k = min(k, len(ev))
	top := ev[0].Score
	for _, e := range ev {
		top = math.Max(top, e.Score)
	}
	rel := func(e Evidence) float64 {
		if top <= 0 {
			return 0
		}
		return e.Score / top
	}
	grams := make([]*compareBuf, len(ev)) // made when first compared, from Compress's pool
	defer func() {
		for _, g := range grams {
			if g != nil {
				comparePool.Put(g)
			}
		}
	}()
	gramsOf := func(i int) gramSet {
		if grams[i] == nil {
			grams[i] = comparePool.Get().(*compareBuf)
			grams[i].grams = appendBigrams(grams[i].grams, ev[i].ChildText)
		}
		return grams[i].grams
	}
	sim := func(i, j int) float64 {
		if a, b := ev[i].Vector, ev[j].Vector; len(a) > 0 && len(a) == len(b) {
			return cosine(a, b)
		}
		return jaccardSets(gramsOf(i), gramsOf(j))
	}
	picked := []int{}
	used := make([]bool, len(ev))
	maxSim := make([]float64, len(ev))
	for len(picked) < k {
		best, bestVal := -1, math.Inf(-1)
		for i := range ev {
			if used[i] {
				continue
			}
			v := lambda*rel(ev[i]) - (1-lambda)*maxSim[i]
			if v > bestVal {
				best, bestVal = i, v
			}
		}
		used[best] = true
		picked = append(picked, best)
		for i := range ev {
			if !used[i] {
				maxSim[i] = math.Max(maxSim[i], sim(i, best))
			}
		}
	}
	out := make([]Evidence, len(picked))
	for i, p := range picked {
		out[i] = ev[p]
	}
	return out
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return d / math.Sqrt(na*nb)
}
