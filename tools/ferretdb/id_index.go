package main

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the SQLite driver FerretDB itself uses
)

// FerretDB 1.24's SQLite backend builds each collection's unique _id index on the expression
// `_ferretdb_sjson->"_id"`, but looks documents up (find, update, delete by _id) with
// `_ferretdb_sjson->'$._id'`. SQLite uses an expression index only for the very same expression,
// so every one of those lookups scans and JSON-decodes the whole table: its cost grows with the
// collection, which MongoDB's _id index never does. keepIDIndexes adds, to every collection table,
// an index on the expression the queries use, so the test server behaves like MongoDB here
// (--id-index=false keeps FerretDB as shipped, to measure the difference).
//
// The index is named with FerretDB's reserved prefix, so no collection or index of a client can
// clash with it. It looks at the data directory a few times a second and only at databases that changed since.
func keepIDIndexes(ctx context.Context, dir string) {
	seen := map[string]string{}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "*.sqlite"))
		for _, file := range files {
			stamp := fileStamp(file) + fileStamp(file+"-wal")
			if seen[file] == stamp {
				continue
			}
			if err := indexDatabase(ctx, file); err != nil {
				// A database dropped or busy meanwhile: look again at the next tick.
				if ctx.Err() == nil && !os.IsNotExist(err) {
					log.Printf("id index: %s: %v", filepath.Base(file), err)
				}
				delete(seen, file)
				continue
			}
			seen[file] = stamp
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func fileStamp(path string) string {
	info, err := os.Stat(path)
	if err != nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d;", info.Size(), info.ModTime().UnixNano())
}

func indexDatabase(ctx context.Context, file string) error {
	if _, err := os.Stat(file); err != nil {
		return err
	}
	// mode=rw: never create a database FerretDB has just dropped.
	db, err := sql.Open("sqlite", "file:"+file+"?mode=rw&_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, `SELECT c.table_name FROM _ferretdb_collections c
		WHERE NOT EXISTS (SELECT 1 FROM sqlite_master m WHERE m.type = 'index' AND m.name = '_ferretdb_test_id_' || c.table_name)`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil // a database FerretDB has not set up yet
		}
		return err
	}
	var tables []string
	for rows.Next() {
		var table string
		if err := rows.Scan(&table); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, table)
	}
	rows.Close()
	for _, table := range tables {
		q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (_ferretdb_sjson->'$._id')`, "_ferretdb_test_id_"+table, table)
		if _, err := db.ExecContext(ctx, q); err != nil && !strings.Contains(err.Error(), "no such table") {
			return err
		}
	}
	return nil
}

// dataDir is the directory of a FerretDB SQLite URL such as `file:data/?_pragma=...`.
func dataDir(sqliteURL string) string {
	u, err := url.Parse(sqliteURL)
	if err != nil {
		return ""
	}
	if u.Opaque != "" {
		return u.Opaque
	}
	return u.Path
}
