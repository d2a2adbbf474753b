// Command devregistry serves an in-memory OCI registry (go-containerregistry's
// pkg/registry) on a loopback address, for trying push and pull on a machine
// without one (scripts/h200-fleet.sh):
//
//	devregistry 127.0.0.1:5000
//
// Plain HTTP, no auth, nothing kept after it exits: not for anything else.
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := "127.0.0.1:5000"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "devregistry: %q: want a loopback HOST:PORT such as 127.0.0.1:5000 (it serves plain HTTP without auth)\n", addr)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "devregistry: serving an in-memory OCI registry on http://%s\n", addr)
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if err := http.ListenAndServe(addr, h); err != nil {
		fmt.Fprintln(os.Stderr, "devregistry:", err)
		os.Exit(1)
	}
}
