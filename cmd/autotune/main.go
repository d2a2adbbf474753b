// Command autotune finds, for each local GPU, weight format and matrix
// shape, the fastest correct GEMV kernel variant and stores it in the cache
// that engines read at start-up. See README.md and docs/.
//
// Exit codes: 0 ok, 1 failure, 2 usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"

	"github.com/gemvtune/gemvtune/tuner"
)

// command is one subcommand; each lives in its own file and registers
// itself in init.
type command struct {
	name  string
	short string                                         // one line for the help listing
	run   func(ctx context.Context, args []string) error // args after the name
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errUsage marks an error as a usage error (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func main() {
	tuner.MaybeWorker() // the tuner re-executes this binary as its measurement worker
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := dispatch(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "autotune:", err)
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func dispatch(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "-help", "--help":
			printHelp()
			return nil
		}
		if c, ok := commands[args[0]]; ok {
			return c.run(ctx, args[1:])
		}
	}
	tune, ok := commands["tune"]
	if !ok {
		return errors.New("tuning is not built into this binary")
	}
	return tune.run(ctx, args)
}

// parseArgs parses a subcommand's flags and allows at most maxArgs
// positional arguments. help is true after --help (the usage was printed);
// a bad flag or argument is a usage error (exit 2).
func parseArgs(fs *flag.FlagSet, args []string, maxArgs int) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > maxArgs {
		return false, usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(maxArgs))
	}
	return false, nil
}

func printHelp() {
	printTuneHelp(os.Stdout)
	fmt.Println()
	fmt.Println("commands (autotune <command> --help):")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Printf("  %-8s %s\n", n, commands[n].short)
	}
	fmt.Println()
	fmt.Println("exit codes: 0 ok, 1 failure, 2 usage")
}
