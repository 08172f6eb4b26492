// Package manage builds a connector's Source from its stored settings and runs the operations on
// connectors that `docmind connector`, the HTTP API (the page's knowledge-base settings) and `docmind
// serve`'s schedule share: add, list, check, sync (now, in the background or as a dry run) and remove.
// It is the one place that knows every connector type; the sync engine itself is shared/connector.
package manage

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/confluence"
	"github.com/docmind/docmind/shared/connector/gdrive"
	"github.com/docmind/docmind/shared/connector/sharepoint"
	"github.com/docmind/docmind/shared/connector/web"
	"github.com/docmind/docmind/shared/netx"
	"github.com/docmind/docmind/shared/rag"
)

// Builder turns a stored connector into the Source that syncs it.
type Builder struct {
	// AllowHosts is DOCMIND_CONNECTOR_ALLOW_HOSTS: host names or CIDRs a connector may reach although
	// private or loopback (validated by config.Validate; an entry that does not parse is ignored here).
	AllowHosts string
	// MaxBytes caps one response from a source (DOCMIND_MAX_BODY_BYTES).
	MaxBytes int64
	// Getenv supplies credentials still missing after the file or secret (DOCMIND_CONNECTOR_<NAME>_<KEY>);
	// nil: none come from variables.
	Getenv func(string) string
	// Secrets reads Secrets Manager where a connector names a secret (nil locally).
	Secrets connector.SecretReader
}

// HTTP is the hardened client every connector sends through: public addresses only, unless listed
// in AllowHosts.
func (b Builder) HTTP() *connector.HTTP {
	prefixes, hosts, _ := netx.ParseAllowList(b.AllowHosts)
	return &connector.HTTP{Client: netx.NewClient(netx.Options{Allow: prefixes, AllowHosts: hosts, Timeout: time.Minute,
		MaxBytes: b.MaxBytes})}
}

// Source parses the connector's settings and loads its credentials. Invalid, naming the problem
// (an unknown key, a bad URL, a missing credential and where it may be given, never a value), for
// settings that cannot work; an unknown type is Invalid too.
func (b Builder) Source(ctx context.Context, c rag.Connector) (connector.Source, error) {
	switch c.Type {
	case "web":
		wc, err := web.ParseConfig([]byte(c.Config))
		if err != nil {
			return nil, err
		}
		return web.New(wc, b.HTTP()), nil
	case "confluence":
		return credentialed(ctx, b, c, confluence.ParseConfig, func(cc confluence.Config) connector.CredentialRef { return cc.CredentialRef },
			confluence.CredentialKeys, confluence.New)
	case "sharepoint":
		return credentialed(ctx, b, c, sharepoint.ParseConfig, func(sc sharepoint.Config) connector.CredentialRef { return sc.CredentialRef },
			sharepoint.CredentialKeys, sharepoint.New)
	case "gdrive":
		return credentialed(ctx, b, c, gdrive.ParseConfig, func(gc gdrive.Config) connector.CredentialRef { return gc.CredentialRef },
			gdrive.CredentialKeys, gdrive.New)
	}
	if !slices.Contains(rag.ConnectorTypes, c.Type) {
		return nil, rag.Errorf("manage.Source", rag.KindInvalid, "connector type %q is not one of %s", c.Type, strings.Join(rag.ConnectorTypes, ", "))
	}
	return nil, rag.Errorf("manage.Source", rag.KindInvalid, "the %s connector is not available in this build yet (docs/connectors.md)", c.Type)
}

// credentialed builds a connector that signs in to its source: its settings parsed (C), the
// credentials they name loaded (variables, a file or a secret), then the source over the hardened
// client.
func credentialed[C any, S connector.Source](ctx context.Context, b Builder, c rag.Connector, parse func([]byte) (C, error),
	ref func(C) connector.CredentialRef, keys []string, build func(C, connector.Credentials, *connector.HTTP) S) (connector.Source, error) {
	settings, err := parse([]byte(c.Config))
	if err != nil {
		return nil, err
	}
	creds, err := connector.LoadCredentials(ctx, c.Name, ref(settings), keys, b.Getenv, b.Secrets)
	if err != nil {
		return nil, err
	}
	return build(settings, creds, b.HTTP()), nil
}
