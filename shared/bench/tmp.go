package bench

import "os"

func osTempDir() (string, error) { return os.MkdirTemp("", "docmind-bench-") }

func removeAll(dir string) { os.RemoveAll(dir) }
