package main

import (
	"log/slog"
	"path/filepath"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector/manage"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/store/sqldb"
)

var _ httpapi.Connectors = (*manage.Manager)(nil)

// connectorManager runs connector operations over the relational store and the ingestion service,
// for the CLI, the serve schedule and the HTTP API alike (secrets: nil here; Secrets Manager is the
// AWS runtime's). Connectors added from the page keep their credentials files under
// <data dir>/connector-credentials/<kb id>/.
func connectorManager(cfg config.Config, db *sqldb.DB, svc *ingest.Service, getenv func(string) string, log *slog.Logger) *manage.Manager {
	return &manage.Manager{Store: db, Indexer: svc, Config: cfg, Getenv: getenv, Log: log,
		CredentialsDir: filepath.Join(cfg.DataDir, "connector-credentials")}
}
