package config

import (
	"strings"
	"testing"
)

// DOCMIND_ACCESS_MAP is checked at start: a map that is not a JSON object of lists is named.
func TestValidateAccessMap(t *testing.T) {
	c := Default()
	c.Auth.AccessMap = `{"group:hr": ["sitegroup:HR Members"]}`
	if err := c.Validate(); err != nil && strings.Contains(err.Error(), "DOCMIND_ACCESS_MAP") {
		t.Fatalf("a good map: %v", err)
	}
	c.Auth.AccessMap = `{"group:hr": "sitegroup:hr"}`
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "DOCMIND_ACCESS_MAP") {
		t.Fatalf("a map whose value is not a list: %v; want DOCMIND_ACCESS_MAP named", err)
	}
}
