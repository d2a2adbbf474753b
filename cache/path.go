package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvCache is the environment variable that names the cache file.
const EnvCache = "GEMV_TUNE_CACHE"

// DefaultPath returns the cache file engines and autotune use when no path
// is given: $GEMV_TUNE_CACHE if set and not empty, else
// $XDG_CACHE_HOME/gemvtune/tune.db, else os.UserCacheDir()/gemvtune/tune.db
// (~/.cache/gemvtune/tune.db on Linux).
func DefaultPath() (string, error) { return DefaultPathEnv(os.LookupEnv) }

// DefaultPathEnv is DefaultPath with the environment read through lookup.
func DefaultPathEnv(lookup func(string) (string, bool)) (string, error) {
	if p, ok := lookup(EnvCache); ok && p != "" {
		return p, nil
	}
	if x, ok := lookup("XDG_CACHE_HOME"); ok && x != "" {
		if !filepath.IsAbs(x) {
			return "", fmt.Errorf("XDG_CACHE_HOME=%q: want an absolute path (or set %s)", x, EnvCache)
		}
		return filepath.Join(x, "gemvtune", "tune.db"), nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder: %w (set %s)", err, EnvCache)
	}
	return filepath.Join(dir, "gemvtune", "tune.db"), nil
}

const readme = `This folder holds gemvtune's tuning cache (tune.db, a bbolt file).

autotune writes it: for each GPU architecture, weight format and matrix
shape, the fastest verified GEMV kernel variant, its measurements and its
compiled cubin. Engines read it at start-up.

It is safe to delete: engines then use their stock kernels until autotune
runs again. See "autotune show" for its contents; GEMV_TUNE_CACHE moves it.
`

// ensureDir creates the cache file's folder; a folder it creates gets a
// README.txt saying what the cache is.
func ensureDir(path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cache folder %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating cache folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.txt"), []byte(readme), 0o644); err != nil {
		return fmt.Errorf("writing cache README: %w", err)
	}
	return nil
}
