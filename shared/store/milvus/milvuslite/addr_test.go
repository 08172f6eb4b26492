package milvuslite

import "testing"

// Addresses read as the official client reads them (ClientConfig.parse): Zilliz Cloud's https:// URL
// means TLS on 443 unless a port is given, and a path names the database.
func TestParseAddr(t *testing.T) {
	for _, c := range []struct {
		in   string
		want addr
	}{
		{"localhost:19530", addr{host: "localhost:19530"}},
		{"10.0.0.7:19530/team", addr{host: "10.0.0.7:19530", db: "team"}},
		{"http://milvus:19530", addr{host: "milvus:19530"}},
		{"https://in01-abc.aws-us-west-2.vectordb.zillizcloud.com", addr{host: "in01-abc.aws-us-west-2.vectordb.zillizcloud.com:443", tls: true}},
		{"https://in01-abc.zillizcloud.com:19535/prod", addr{host: "in01-abc.zillizcloud.com:19535", tls: true, db: "prod"}},
	} {
		got, err := parseAddr(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseAddr(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "https://"} {
		if got, err := parseAddr(bad); err == nil {
			t.Errorf("parseAddr(%q) = %+v, want an error", bad, got)
		}
	}
}
