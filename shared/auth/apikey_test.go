package auth

import (
	"strings"
	"testing"
)

func TestNewAPIKey(t *testing.T) {
	plain, prefix, hash, err := NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plain, "dm_") || len(plain) != 46 {
		t.Errorf("plaintext %q: want dm_ and 43 base64url characters (46 in all), got %d", plain, len(plain))
	}
	if !LooksLikeAPIKey(plain) {
		t.Errorf("LooksLikeAPIKey(%q) = false for a fresh key", plain)
	}
	if prefix != plain[:10] {
		t.Errorf("prefix = %q, want the first 10 characters %q", prefix, plain[:10])
	}
	if hash != HashAPIKey(plain) || len(hash) != 64 || strings.ToLower(hash) != hash {
		t.Errorf("hash = %q, want lowercase hex SHA-256 of the plaintext", hash)
	}
	if strings.Contains(hash, plain[3:13]) {
		t.Errorf("hash %q contains plaintext material", hash)
	}
	seen := map[string]bool{plain: true}
	for range 200 {
		p, _, _, err := NewAPIKey()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("NewAPIKey repeated %q", p)
		}
		seen[p] = true
	}
}

func TestHashAPIKeyKnownVector(t *testing.T) {
	// echo -n dm_test | sha256sum
	const want = "d56ee204085874fae45c2f855a3f189ba617110ca258afda486a8fcd8743e48a"
	if got := HashAPIKey("dm_test"); got != want {
		t.Errorf("HashAPIKey(dm_test) = %s, want %s", got, want)
	}
}

func TestLooksLikeAPIKey(t *testing.T) {
	good := "dm_" + strings.Repeat("aZ0-_", 8) + "abc"
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"well formed", good, true},
		{"empty", "", false},
		{"no prefix", "xx_" + good[3:], false},
		{"upper-case prefix", "DM_" + good[3:], false},
		{"one short", good[:len(good)-1], false},
		{"one long", good + "a", false},
		{"standard base64 plus", good[:len(good)-1] + "+", false},
		{"padding", good[:len(good)-1] + "=", false},
		{"space", good[:len(good)-1] + " ", false},
		{"a JWT", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LooksLikeAPIKey(tt.in); got != tt.want {
				t.Errorf("LooksLikeAPIKey(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
