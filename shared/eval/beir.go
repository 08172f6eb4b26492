// Package eval measures retrieval on BEIR-format datasets: loading (corpus.jsonl[.gz], queries.jsonl,
// qrels/<split>.tsv, optional answers.jsonl), the standard metrics (nDCG@k, Recall@k, MRR@k) and a
// runner that times every query and reports the worst ones.
package eval

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CorpusDoc is one BEIR document.
type CorpusDoc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Query is one BEIR query.
type Query struct {
	ID   string `json:"_id"`
	Text string `json:"text"`
}

// Dataset is a loaded BEIR folder restricted to one split's judged queries.
type Dataset struct {
	Name       string
	Split      string
	Corpus     []CorpusDoc
	Queries    []Query
	Qrels      map[string]map[string]int // query id -> doc id -> relevance (> 0 is relevant)
	Answers    map[string][]string
	CorpusHash string // SHA-256 of the corpus file: the cache key of its ingested copy
}

// maxLine bounds one JSONL record (a long abstract is a few KB).
const maxLine = 16 << 20

func openMaybeGz(path string) (io.ReadCloser, string, error) {
	for _, p := range []string{path, path + ".gz"} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if !strings.HasSuffix(p, ".gz") {
			return f, p, nil
		}
		gz, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, p, fmt.Errorf("%s: %w", p, err)
		}
		return struct {
			io.Reader
			io.Closer
		}{gz, f}, p, nil
	}
	return nil, "", fmt.Errorf("%s(.gz) not found", path)
}

func readJSONL[T any](path string, fn func(T) error) (string, error) {
	rc, used, err := openMaybeGz(path)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			return used, fmt.Errorf("%s line %d: %w", used, n, err)
		}
		if err := fn(v); err != nil {
			return used, fmt.Errorf("%s line %d: %w", used, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return used, fmt.Errorf("%s: %w", used, err)
	}
	return used, nil
}

func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Load reads a BEIR folder. Only queries judged in the split are kept, in file order.
func Load(dir, split string) (*Dataset, error) {
	ds := &Dataset{Name: filepath.Base(filepath.Clean(dir)), Split: split, Qrels: map[string]map[string]int{}, Answers: map[string][]string{}}
	seen := map[string]bool{}
	corpusPath, err := readJSONL(filepath.Join(dir, "corpus.jsonl"), func(d CorpusDoc) error {
		if d.ID == "" {
			return fmt.Errorf("document without _id")
		}
		if seen[d.ID] {
			return fmt.Errorf("duplicate document id %q", d.ID)
		}
		seen[d.ID] = true
		ds.Corpus = append(ds.Corpus, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ds.CorpusHash, err = fileHash(corpusPath); err != nil {
		return nil, err
	}
	qf, err := os.Open(filepath.Join(dir, "qrels", split+".tsv"))
	if err != nil {
		return nil, fmt.Errorf("qrels for split %q: %w", split, err)
	}
	defer qf.Close()
	sc := bufio.NewScanner(qf)
	for n := 1; sc.Scan(); n++ {
		f := strings.Split(strings.TrimSpace(sc.Text()), "\t")
		if len(f) < 3 || (n == 1 && f[0] == "query-id") {
			continue
		}
		rel, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("qrels line %d: %q is not a relevance grade", n, f[2])
		}
		if ds.Qrels[f[0]] == nil {
			ds.Qrels[f[0]] = map[string]int{}
		}
		ds.Qrels[f[0]][f[1]] = rel
	}
	if _, err := readJSONL(filepath.Join(dir, "queries.jsonl"), func(q Query) error {
		if _, ok := ds.Qrels[q.ID]; ok {
			ds.Queries = append(ds.Queries, q)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if len(ds.Queries) == 0 {
		return nil, fmt.Errorf("no query of %s/queries.jsonl is judged in qrels/%s.tsv", dir, split)
	}
	if _, err := os.Stat(filepath.Join(dir, "answers.jsonl")); err == nil {
		type ans struct {
			ID      string   `json:"_id"`
			Answers []string `json:"answers"`
		}
		if _, err := readJSONL(filepath.Join(dir, "answers.jsonl"), func(a ans) error { ds.Answers[a.ID] = a.Answers; return nil }); err != nil {
			return nil, err
		}
	}
	return ds, nil
}
