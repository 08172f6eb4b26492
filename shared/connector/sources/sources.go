// Package sources builds a connector's Source from its stored settings: the one place that knows every
// connector type, shared by the CLI and serve (cmd/docmind) and the AWS sync function
// (functions/connector). Credentials come from where the settings say (a Secrets Manager secret, a
// file, variables) and are never logged.
package sources

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/confluence"
	"github.com/docmind/docmind/shared/connector/gdrive"
	"github.com/docmind/docmind/shared/connector/sharepoint"
	"github.com/docmind/docmind/shared/connector/web"
	"github.com/docmind/docmind/shared/netx"
	"github.com/docmind/docmind/shared/rag"
)

// HTTP is the hardened client a connector sends through, with the allow list of
// DOCMIND_CONNECTOR_ALLOW_HOSTS (validated by config.Validate).
func HTTP(cfg config.Config) *connector.HTTP {
	prefixes, hosts, _ := netx.ParseAllowList(cfg.Connectors.AllowHosts)
	return &connector.HTTP{Client: netx.NewClient(netx.Options{Allow: prefixes, AllowHosts: hosts, Timeout: time.Minute,
		MaxBytes: cfg.Server.MaxBodyBytes})}
}

// Build builds a connector's Source from its stored settings. secrets reads Secrets Manager where a
// connector names a secret (nil locally).
func Build(ctx context.Context, cfg config.Config, c rag.Connector, getenv func(string) string, secrets connector.SecretReader) (connector.Source, error) {
	// enforce_permissions is every connector's setting (shared/access reads it from the stored
	// settings): each connector's own strict parser gets the rest
	rest, _, err := access.SplitSettings([]byte(c.Config))
	if err != nil {
		return nil, err
	}
	c.Config = string(rest)
	switch c.Type {
	case "web":
		wc, err := web.ParseConfig([]byte(c.Config))
		if err != nil {
			return nil, err
		}
		return web.New(wc, HTTP(cfg)), nil
	case "confluence":
		return credentialed(ctx, cfg, c, confluence.ParseConfig, func(cc confluence.Config) connector.CredentialRef { return cc.CredentialRef },
			confluence.CredentialKeys, getenv, secrets, confluence.New)
	case "sharepoint":
		return credentialed(ctx, cfg, c, sharepoint.ParseConfig, func(sc sharepoint.Config) connector.CredentialRef { return sc.CredentialRef },
			sharepoint.CredentialKeys, getenv, secrets, sharepoint.New)
	case "gdrive":
		return credentialed(ctx, cfg, c, gdrive.ParseConfig, func(gc gdrive.Config) connector.CredentialRef { return gc.CredentialRef },
			gdrive.CredentialKeys, getenv, secrets, gdrive.New)
	}
	if !slices.Contains(rag.ConnectorTypes, c.Type) {
		return nil, rag.Errorf("docmind", rag.KindInvalid, "connector type %q is not one of %s", c.Type, strings.Join(rag.ConnectorTypes, ", "))
	}
	return nil, rag.Errorf("docmind", rag.KindInvalid, "the %s connector is not available in this build yet (docs/connectors.md)", c.Type)
}

// credentialed builds a connector that signs in to its source: its settings parsed (C), the
// credentials they name loaded (variables, a file or a secret), then the source over the hardened
// client.
func credentialed[C any, S connector.Source](ctx context.Context, cfg config.Config, c rag.Connector, parse func([]byte) (C, error),
	ref func(C) connector.CredentialRef, keys []string, getenv func(string) string, secrets connector.SecretReader,
	build func(C, connector.Credentials, *connector.HTTP) S) (connector.Source, error) {
	settings, err := parse([]byte(c.Config))
	if err != nil {
		return nil, err
	}
	creds, err := connector.LoadCredentials(ctx, c.Name, ref(settings), keys, getenv, secrets)
	if err != nil {
		return nil, err
	}
	return build(settings, creds, HTTP(cfg)), nil
}
