// Command docmind is the local all-in-one docmind server and operator CLI: `docmind serve` runs
// everything in one process on embedded stores; the other commands operate on the same data directory.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/identity"
	"github.com/docmind/docmind/shared/rag"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK     = 0
	exitFail   = 1
	exitConfig = 2 // bad flags or configuration
)

const usage = `docmind: knowledge-base question answering

Usage: docmind <command> [flags]

Commands:
  serve     run the local server (HTTP on 127.0.0.1:8080 by default), watching <data>/inbox
  ingest    index files or folders into a knowledge base (ingest --kb NAME PATH...)
  search    run the retrieval chain for a query and show every stage (search [--kb NAME] "query")
  ask       answer a question with citations, streaming the answer and its timeline (ask [--kb NAME] [--doc ID|NAME]... [--json] "question")
  eval      measure retrieval, or with --variant answer the answers, their confidence bands and calibration, on a BEIR dataset
            (eval --dataset DIR [--variant bm25|bm25-plain|vector|hybrid|ranked|rerank|full|all|stages|answer] [--sweep SPEC] [--out FILE] [--calibrate [--calibration FILE]] [--unanswerable] [--sample N])
  bench     measure speed against same-run references (bench [--suite NAME|all] [--out DIR] [--quick])
  migrate   apply pending database migrations
  kb        list, create or delete knowledge bases, grant and revoke roles (kb list | kb create NAME | kb delete NAME | kb grant KB EMAIL --role R | kb revoke KB EMAIL)
  user      create, list, promote or demote and delete users of a tenant (user create EMAIL --tenant T [--role admin|member] |
            user list | user set-role EMAIL --role admin|member | user delete EMAIL: revokes their keys and roles)
  tenant    list the tenants of this store with their user counts, or create one (tenant list | tenant create T)
  key       create, list and revoke API keys (key create --user EMAIL [--name N] | key list | key revoke ID)
  reconcile check SQL, vectors, blobs and the inbox agree; --repair fixes drift (reconcile [--kb NAME] [--repair] [--json])
  connector sync web sites and wikis into a knowledge base (connector add NAME --kb KB --type web --url URL | connector list |
            connector sync NAME [--dry-run] | connector remove NAME)
  metadata  metadata mirror: copy every document's metadata onto its Milvus rows (after a deploy added the field)
  mcp       serve the Model Context Protocol on stdin/stdout for a desktop assistant (identity: DOCMIND_API_KEY, or the local user with auth none)
  config    print the effective configuration (secrets redacted); --vars lists every variable
  version   print the version
  aws       aws preflight --stack NAME [--region R]: check the account, secrets, VPC and bucket a stack needs (before or after a deploy)
            aws smoke --stack NAME [--region R]: after a deploy, upload, stream, delete and check consistency (key in DOCMIND_SMOKE_KEY)

Every command takes --data DIR (default ./data or DOCMIND_DATA_DIR), --config FILE (JSON, optional)
and --json where it prints a result. Run "docmind <command> -h" for a command's flags.
`

// env is what every command shares.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	e := env{ctx: ctx, stdout: stdout, stderr: stderr, getenv: getenv}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitConfig
	}
	cmds := map[string]func(env, []string) int{
		"serve": cmdServe, "ingest": cmdIngest, "search": cmdSearch, "ask": cmdAsk, "eval": cmdEval, "bench": cmdBench, "migrate": cmdMigrate, "kb": cmdKB, "user": cmdUser, "tenant": cmdTenant, "key": cmdKey, "reconcile": cmdReconcile, "connector": cmdConnector, "metadata": cmdMetadata, "config": cmdConfig, "version": cmdVersion, "aws": cmdAWS, "mcp": cmdMCP,
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "docmind: unknown command %q\n\n%s", args[0], usage)
		return exitConfig
	}
	return cmd(e, args[1:])
}

// parseInterspersed parses flags that may stand before, between or after positional arguments
// ("kb create manuals --json") and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// common are the flags every command takes.
type common struct {
	data       string
	configFile string
	json       bool
	tenant     string
}

func newFlags(name string, e env, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet("docmind "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.StringVar(&c.data, "data", "", "data directory (default ./data, or DOCMIND_DATA_DIR)")
	fs.StringVar(&c.configFile, "config", "", "JSON config file (default DOCMIND_CONFIG)")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	fs.StringVar(&c.tenant, "tenant", "", "tenant to act in (default the local tenant, DOCMIND_TENANT)")
	return fs
}

// load builds the effective config: defaults < file < environment < flags. It prints every problem
// and returns false on a bad config.
func (c common) load(e env, override func(*config.Config)) (config.Config, bool) {
	file := c.configFile
	if file == "" {
		file = e.getenv("DOCMIND_CONFIG")
	}
	cfg, err := config.Load(file, e.getenv)
	if err == nil {
		if c.data != "" {
			cfg.DataDir = c.data
		}
		if c.tenant != "" {
			cfg.Tenant = c.tenant
		}
		if override != nil {
			override(&cfg)
		}
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "docmind: %v\n", err)
		return cfg, false
	}
	return cfg, true
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	lvl.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// fail prints err for an operator and picks the exit status from its kind.
func fail(e env, err error) int {
	// errors raised by this command carry the op "docmind" themselves: print the prefix once
	fmt.Fprintf(e.stderr, "docmind: %s\n", strings.TrimPrefix(err.Error(), "docmind: "))
	if rag.Is(err, rag.KindInvalid) {
		return exitConfig
	}
	return exitFail
}

func cmdVersion(e env, args []string) int {
	var c common
	fs := newFlags("version", e, &c)
	if fs.Parse(args) != nil {
		return exitConfig
	}
	if c.json {
		printJSON(e.stdout, map[string]string{"version": version})
	} else {
		fmt.Fprintln(e.stdout, "docmind", version)
	}
	return exitOK
}

func cmdConfig(e env, args []string) int {
	var c common
	fs := newFlags("config", e, &c)
	vars := fs.Bool("vars", false, "list every configuration variable with its default (Markdown table)")
	if fs.Parse(args) != nil {
		return exitConfig
	}
	if *vars {
		vs := config.Vars()
		if c.json {
			printJSON(e.stdout, vs)
			return exitOK
		}
		writeVarsTable(e.stdout, vs)
		return exitOK
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	red := cfg.Redacted()
	if c.json {
		printJSON(e.stdout, red)
		return exitOK
	}
	keys := make([]string, 0, len(red))
	for k := range red {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(e.stdout, "%s = %v\n", k, red[k])
	}
	return exitOK
}

// writeVarsTable prints the variables as the Markdown table docs/configuration.md holds (a test keeps
// the page equal to this output).
func writeVarsTable(w io.Writer, vs []config.Var) {
	fmt.Fprintln(w, "| variable | config file key | default | meaning |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, v := range vs {
		def := v.Default
		if def == "" {
			def = "(empty)"
		}
		doc := v.Doc
		if v.Secret {
			doc += " (secret: redacted in output)"
		}
		fmt.Fprintf(w, "| `%s` | `%s` | `%s` | %s |\n", v.Env, v.Key, def, doc)
	}
}

func cmdMigrate(e env, args []string) int {
	var c common
	fs := newFlags("migrate", e, &c)
	if fs.Parse(args) != nil {
		return exitConfig
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	db, err := openSQL(e.ctx, cfg)
	if err != nil {
		return fail(e, err)
	}
	defer db.Close()
	applied, err := db.Migrate(e.ctx)
	if err != nil {
		return fail(e, err)
	}
	v, err := db.SchemaVersion(e.ctx)
	if err != nil {
		return fail(e, err)
	}
	if applied == nil {
		applied = []int{}
	}
	if c.json {
		printJSON(e.stdout, map[string]any{"applied": applied, "schema_version": v, "driver": cfg.SQL.Driver})
	} else if len(applied) == 0 {
		fmt.Fprintf(e.stdout, "schema is current (version %d, %s)\n", v, cfg.SQL.Driver)
	} else {
		fmt.Fprintf(e.stdout, "applied migrations %v; schema version %d (%s)\n", applied, v, cfg.SQL.Driver)
	}
	return exitOK
}

func cmdKB(e env, args []string) int {
	var c common
	fs := newFlags("kb", e, &c)
	desc := fs.String("description", "", "description (kb create)")
	role := fs.String("role", "reader", "role to grant: reader, editor or owner (kb grant)")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: docmind kb list | kb create NAME [--description D] | kb delete NAME | kb grant KB EMAIL --role reader|editor|owner | kb revoke KB EMAIL  [--tenant T] [--data DIR] [--json]")
	}
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return exitConfig
	}
	if len(rest) > 0 && (rest[0] == "grant" || rest[0] == "revoke") {
		if len(rest) != 3 {
			fs.Usage()
			return exitConfig
		}
		return kbMember(e, c, rest[0], rest[1], rest[2], *role)
	}
	if len(rest) == 0 || (rest[0] != "list" && len(rest) != 2) || (rest[0] == "list" && len(rest) != 1) {
		fs.Usage()
		return exitConfig
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	db, err := openSQL(e.ctx, cfg)
	if err != nil {
		return fail(e, err)
	}
	defer db.Close()
	if _, err := db.Migrate(e.ctx); err != nil {
		return fail(e, err)
	}
	switch rest[0] {
	case "list":
		kbs, err := db.ListKBs(e.ctx, cfg.Tenant)
		if err != nil {
			return fail(e, err)
		}
		if c.json {
			printJSON(e.stdout, kbs)
			return exitOK
		}
		if len(kbs) == 0 {
			fmt.Fprintln(e.stdout, "no knowledge bases")
		}
		for _, kb := range kbs {
			fmt.Fprintf(e.stdout, "%s\t%s\tversion %d\t%s\n", kb.ID, kb.Name, kb.Version, kb.Description)
		}
	case "create":
		kb := rag.KnowledgeBase{Tenant: cfg.Tenant, Name: rest[1], Description: *desc}
		if err := db.CreateKB(e.ctx, &kb); err != nil {
			if rag.Is(err, rag.KindConflict) {
				err = fmt.Errorf("a knowledge base named %q already exists", rest[1])
				return fail(e, rag.E("kb create", rag.KindInvalid, err))
			}
			return fail(e, err)
		}
		audit(e, db, cfg.Tenant, "kb.create", kb.ID, kb.Name)
		if c.json {
			printJSON(e.stdout, kb)
		} else {
			fmt.Fprintf(e.stdout, "created knowledge base %s (%s)\n", kb.Name, kb.ID)
		}
	case "delete":
		kb, err := db.GetKBByName(e.ctx, cfg.Tenant, rest[1])
		if rag.Is(err, rag.KindNotFound) {
			kb, err = pendingKBDelete(e, db, cfg.Tenant, rest[1], err) // repeating an interrupted delete finishes it
		}
		if err != nil {
			if rag.Is(err, rag.KindNotFound) {
				return fail(e, rag.Errorf("kb delete", rag.KindInvalid, "no knowledge base named %q", rest[1]))
			}
			return fail(e, err)
		}
		db.Close() // the stores are opened again, with everything else
		if err := deleteKB(e.ctx, cfg, kb); err != nil {
			return fail(e, err)
		}
		auditOpening(e, cfg, "kb.delete", kb.ID, kb.Name)
		if c.json {
			printJSON(e.stdout, map[string]any{"deleted": kb.ID, "name": kb.Name})
		} else {
			fmt.Fprintf(e.stdout, "deleted knowledge base %s (%s)\n", kb.Name, kb.ID)
		}
	default:
		fs.Usage()
		return exitConfig
	}
	return exitOK
}

func cmdServe(e env, args []string) int {
	var c common
	fs := newFlags("serve", e, &c)
	addr := fs.String("addr", "", "listen address (default 127.0.0.1:8080, or DOCMIND_ADDR)")
	noDemo := fs.Bool("no-demo", false, "do not install the demo knowledge base on first start")
	noWatch := fs.Bool("no-watch", false, "do not watch <data>/inbox")
	if fs.Parse(args) != nil {
		return exitConfig
	}
	cfg, ok := c.load(e, func(cfg *config.Config) {
		if *addr != "" {
			cfg.Server.Addr = *addr
		}
	})
	if !ok {
		return exitConfig
	}
	if err := checkListenAddr(cfg.Server.Addr, cfg.Auth.Mode); err != nil {
		fmt.Fprintf(e.stderr, "docmind: %v\n", err)
		return exitConfig
	}
	m := &Main{Config: cfg, Logger: newLogger(cfg, e.stderr), Version: version, NoDemo: *noDemo, NoWatch: *noWatch, Progress: e.stderr}
	if err := m.Open(e.ctx); err != nil {
		m.Close()
		return fail(e, err)
	}
	defer m.Close()
	m.Logger.Info("docmind serving", "addr", "http://"+m.Addr(), "data", cfg.DataDir, "version", version)
	m.progress("serving at %s (Ctrl-C stops)", m.URL())
	if err := m.Serve(e.ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fail(e, err)
	}
	return exitOK
}

// listenHostIsLoopback reports whether host names only this machine.
func checkListenAddr(addr, authMode string) error {
	// the same parse the server uses, so " none" cannot pass here as a mode and run as none
	if m, err := identity.ParseMode(authMode); err == nil && !m.None() {
		return nil // every /api and /v1 request needs a key or a token
	}
	host := addr
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		host = addr[:i]
	}
	host = strings.Trim(host, "[]")
	if isLoopback(host) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q: a non-loopback address would expose every knowledge base without authentication; "+
		"listen on 127.0.0.1 (the default) or ::1, or turn authentication on (DOCMIND_AUTH=keys, jwt or keys,jwt)", addr)
}
