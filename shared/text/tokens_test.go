package text

import "testing"

func TestEstimateTokens(t *testing.T) {
	cases := []struct {
		s        string
		min, max int
	}{
		{"", 0, 0},
		{"保险条款", 8, 8},
		{"The quick brown fox jumps over the lazy dog.", 10, 20},
		{"if (x != nil) { return fmt.Errorf(\"%w\", err) }", 18, 45},
	}
	for _, c := range cases {
		if n := EstimateTokens(c.s); n < c.min || n > c.max {
			t.Errorf("EstimateTokens(%q) = %d, want %d..%d", c.s, n, c.min, c.max)
		}
	}
}
