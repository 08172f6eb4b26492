package awspreflight

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/milvus/milvusexpr"
	mysqlstore "github.com/docmind/docmind/shared/store/mysql"
)

// The stores are probed from where preflight runs, with the functions' own adapters: Milvus through
// shared/store/milvus (the official client) as the query function opens it (Late: never creating or
// loading), Aurora through shared/store/mysql with tls=rds as every function connects. Both usually
// live inside the VPC: from a laptop they are unreachable, which is a warning saying where to run from,
// not a failure.

// collection is the functions' collection (config default; template.yaml does not override it).
const collection = "docmind_chunks"

// probeTimeout bounds each connection attempt.
const probeTimeout = 5 * time.Second

const fromInside = "run docmind aws preflight from inside the VPC (CloudShell in VPC mode, or an instance in the functions' subnets with their security group) to check it"

// stores checks the Milvus collection and Aurora's TLS for a deployed stack; the secrets' values come
// from the secret checks (nothing is read twice, nothing is printed).
func (c *Checker) stores(ctx context.Context, st stack, secrets map[string]string) []Finding {
	if !st.deployed {
		return []Finding{{Check: "stores", Status: OK, Message: "not deployed yet: the Milvus collection and Aurora's TLS are checked after the deploy"}}
	}
	// a store whose secret did not parse is not connected to: its secret's finding already fails
	var out []Finding
	if _, ok := secrets["DOCMIND_MILVUS_TOKEN"]; ok {
		out = append(out, c.milvusCollection(ctx, st, secrets))
	}
	if _, ok := secrets["DOCMIND_SQL_DSN"]; ok {
		out = append(out, c.auroraTLS(ctx, st, secrets))
	}
	return out
}

func (c *Checker) milvusCollection(ctx context.Context, st stack, secrets map[string]string) Finding {
	f := Finding{Check: "milvus-collection"}
	addr := st.params["MilvusAddr"]
	token := secrets["DOCMIND_MILVUS_TOKEN"]
	dim, err := strconv.Atoi(orDefault(st.params["EmbeddingDim"], "1024"))
	if err != nil {
		f.Status, f.Message, f.Fix = Fail, fmt.Sprintf("EmbeddingDim %q is not a number", st.params["EmbeddingDim"]), "set EmbeddingDim to the embedding model's dimension"
		return f
	}
	ix, err := milvus.Open(ctx, milvus.Options{Addr: addr, Token: token, Collection: collection, Dim: dim, Late: true, Lazy: true,
		DialTimeout: probeTimeout, CallTimeout: probeTimeout})
	if err != nil {
		f.Status, f.Message, f.Fix = Fail, err.Error(), "set MilvusAddr to host:port or the Zilliz https:// endpoint"
		return f
	}
	defer ix.Close()
	err = ix.Check(ctx)
	switch {
	case err == nil && !ix.KeepsMetadata():
		f.Status = Warn
		f.Message = fmt.Sprintf("collection %s at %s is loaded with dimension %d but has no metadata field: a metadata filter passing more than %d documents is searched in parts of that many ids", collection, addr, dim, milvusexpr.MaxFilterIDs)
		f.Fix = "the ingest side adds the field at its next cold start (Milvus 2.6 or Zilliz Cloud: AddCollectionField); then run docmind metadata mirror once with the stack's stores (DOCMIND_SQL_DRIVER=mysql, DOCMIND_VECTOR_DRIVER=milvus, from inside the VPC) to copy the existing documents' metadata; on an older Milvus, drop the collection and ingest again"
	case err == nil:
		f.Status, f.Message = OK, fmt.Sprintf("collection %s at %s exists with dimension %d and the metadata field, and is loaded", collection, addr, dim)
	case rag.Is(err, rag.KindNotFound):
		f.Status, f.Message = Fail, fmt.Sprintf("collection %s does not exist at %s: every question fails until it does", collection, addr)
		f.Fix = "the api, ingest and stage functions create and load it at their first start: upload a document (make smoke does); if it stays missing, the Milvus user needs the CreateCollection privilege"
	case rag.Is(err, rag.KindInvalid):
		f.Status, f.Message = Fail, err.Error()
		f.Fix = "EmbeddingDim must equal the collection's dimension: set it to the embedding model's, or drop the collection and ingest again"
	case strings.Contains(err.Error(), "not loaded"):
		f.Status, f.Message = Fail, fmt.Sprintf("collection %s exists but is not loaded: every question fails with Unavailable", collection)
		f.Fix = "load it (Zilliz console: Load; pymilvus: load_collection), or start an ingest-side function (upload a document), whose open loads it"
	case unauthenticated(err):
		f.Status, f.Message = Fail, "Milvus refused the secret's token: "+err.Error()
		f.Fix = "put a token that Milvus accepts in MilvusSecretArn ({\"token\":\"user:password\"} or a Zilliz API key)"
	default:
		f.Status, f.Message = Warn, fmt.Sprintf("Milvus at %s is not reachable from here: %v", addr, err)
		f.Fix = fromInside + "; Zilliz Cloud's public endpoint is reachable from anywhere, so check MilvusAddr if it is one"
	}
	return f
}

func unauthenticated(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "unauthenticated") || strings.Contains(s, "auth check failure") || strings.Contains(s, "permissiondenied")
}

// auroraTLS connects as the functions do: the secret's DSN, the RDS Proxy endpoint when the stack names
// one, tls=rds (the certificate verified against the embedded RDS bundle and the host name checked).
func (c *Checker) auroraTLS(ctx context.Context, st stack, secrets map[string]string) Finding {
	f := Finding{Check: "aurora-tls"}
	cfg, err := mysqldrv.ParseDSN(secrets["DOCMIND_SQL_DSN"])
	if err != nil {
		f.Status, f.Message, f.Fix = Fail, "the MySQL secret's DSN does not parse", "put the RDS-managed secret's shape in MySQLSecretArn (DEPLOY.md section 3)"
		return f
	}
	if host := st.params["MySQLProxyEndpoint"]; host != "" {
		port := cfg.Addr[strings.LastIndex(cfg.Addr, ":")+1:]
		cfg.Addr = net.JoinHostPort(host, port)
	}
	cfg.TLS, cfg.TLSConfig = nil, "rds"
	db, err := mysqlstore.Open(ctx, cfg.FormatDSN(), mysqlstore.Options{MaxOpenConns: 1, DialTimeout: probeTimeout, CAFile: c.MySQLCAFile}, nil)
	if err == nil {
		db.Close()
		f.Status, f.Message = OK, fmt.Sprintf("%s accepts TLS (tls=rds: certificate and host name verified) and the secret's credentials", cfg.Addr)
		return f
	}
	msg := err.Error()
	var ne net.Error
	var me *mysqldrv.MySQLError
	switch {
	case strings.Contains(msg, "does not support TLS"):
		f.Status, f.Message = Fail, cfg.Addr+" does not accept TLS: every function connects with tls=rds and would fail"
		f.Fix = "Aurora MySQL always accepts TLS: the secret's host is not an Aurora or RDS endpoint; enable TLS on that server (and set require_secure_transport=ON)"
	case strings.Contains(msg, "unknown authority"):
		f.Status, f.Message = Fail, cfg.Addr+"'s certificate is not signed by the RDS certificate authorities the functions trust: "+msg
		f.Fix = "straight to Aurora, the RDS CA bundle must be embedded: fetch it into shared/store/mysql/rdstls/rdsca/ (DEPLOY.md section 4, step 5), rebuild and deploy (preflight embeds it too); for another server give the functions its CA in DOCMIND_MYSQL_CA_FILE (docs/aws-runtime.md)"
	case strings.Contains(msg, "certificate is valid for") || strings.Contains(msg, "cannot validate certificate for"):
		f.Status, f.Message = Fail, cfg.Addr+"'s certificate names another host: "+msg
		f.Fix = "use the endpoint name the certificate names (the cluster or proxy endpoint), not an IP address or a CNAME of your own"
	case errors.As(err, &me):
		f.Status, f.Message = Fail, fmt.Sprintf("%s accepts TLS but refused the secret's credentials: %s", cfg.Addr, me.Message)
		f.Fix = "put the database user's current username and password in MySQLSecretArn (an RDS-managed secret rotates them)"
	case errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "connect:"):
		f.Status, f.Message, f.Fix = Warn, fmt.Sprintf("%s is not reachable from here: %v", cfg.Addr, err), fromInside
	default:
		f.Status, f.Message, f.Fix = Fail, msg, "check the MySQL secret and the cluster's parameter group; "+fromInside
	}
	return f
}
