//go:build !bench_compare

package bench

import "context"

// Without the bench_compare build tag no peer library is linked: product binaries stay free of them,
// and rows name their peers as not run. `make bench` builds with the tag.

const peersLinked = false

type splitter struct {
	name  string
	split func(string) []string
}

func peerSplitters() []splitter { return nil }

func peerVector(dim int, ids []string, data []float32) (search func(q []float32), name string, err error) {
	return nil, "", nil
}

func blevePeer() (keywordPeer, bool) { return keywordPeer{}, false }

func peerRetriever(direct func(ctx context.Context, q string) ([]string, []float32, error)) (func(ctx context.Context, q string), string) {
	return nil, ""
}
