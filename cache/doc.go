// Package cache stores the tuner's decisions: for each compute capability
// ("sm_90"), weight format ("q4_0") and matrix shape ("4096x14336") one
// Record (the winner, its figures and provenance, and a summary of every
// candidate measured) and the winner's cubin.
//
// The store is one bbolt file (go.etcd.io/bbolt). Its layout:
//
//	_meta                      "layout" → file layout version (FileVersion);
//	                           "index" → every record's binary Summary, one blob
//	                           (a Table of fixed-size records; see table.go)
//	_cubins                    sha256 hex → cubin bytes (stored once per content)
//	_cubinrefs                 sha256 hex → number of records that use it
//	sm_90 / q4_0 / 4096x14336  → Record as JSON with a "schema" field
//
// Open a DB with Open. A writer (the tuner) holds a side lock file
// (PATH.lock, holding its pid) for as long as the DB is open, so a second
// writer fails with ErrLocked naming the first one's pid. The bbolt file
// itself is opened only for the length of one operation, so readers (engines,
// autotune show/lookup/export) run concurrently with each other and with a
// writer: they wait at most Options.Timeout for a write transaction to end.
//
// Every Put is one transaction: an interrupted tune leaves every finished
// entry and no half entry. Garbage, truncated or foreign files never panic:
// operations return errors that match ErrCorrupt with errors.Is. An empty
// (zero-length) file is an empty cache; a writer initialises it.
//
// Policy (package gemvtune) reads ReadTable, which copies the index's
// records and strings in two runs of bytes and locates (does not read) the
// cubins, so an engine's start-up stays around a millisecond or two for
// thousands of records; LoadCubin reads a located cubin later without
// bbolt. Snapshot gives the same summaries as a slice of Summary.
package cache
