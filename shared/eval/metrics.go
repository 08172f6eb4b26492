package eval

import "math"

// NDCG is nDCG@k with graded relevance: DCG = sum (2^rel - 1) / log2(i + 2) over the top k, divided by
// the DCG of the ideal ranking (the trec_eval / BEIR definition with exponential gain).
func NDCG(ranked []string, rel map[string]int, k int) float64 {
	var dcg float64
	for i, id := range ranked[:min(k, len(ranked))] {
		if r := rel[id]; r > 0 {
			dcg += (math.Pow(2, float64(r)) - 1) / math.Log2(float64(i)+2)
		}
	}
	var grades []int
	for _, r := range rel {
		if r > 0 {
			grades = append(grades, r)
		}
	}
	// ideal: grades in descending order
	for i := 1; i < len(grades); i++ {
		for j := i; j > 0 && grades[j] > grades[j-1]; j-- {
			grades[j], grades[j-1] = grades[j-1], grades[j]
		}
	}
	var idcg float64
	for i, r := range grades[:min(k, len(grades))] {
		idcg += (math.Pow(2, float64(r)) - 1) / math.Log2(float64(i)+2)
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

// Recall is the share of relevant documents found in the top k.
func Recall(ranked []string, rel map[string]int, k int) float64 {
	total := 0
	for _, r := range rel {
		if r > 0 {
			total++
		}
	}
	if total == 0 {
		return 0
	}
	found := 0
	for _, id := range ranked[:min(k, len(ranked))] {
		if rel[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(total)
}

// MRR is the reciprocal rank of the first relevant document within the top k (0 when none).
func MRR(ranked []string, rel map[string]int, k int) float64 {
	for i, id := range ranked[:min(k, len(ranked))] {
		if rel[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}
