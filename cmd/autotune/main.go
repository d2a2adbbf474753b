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
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"

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
	// The first Ctrl-C or SIGTERM stops the run cleanly (finished entries
	// stay saved); a second one, with the handler gone, ends the process.
	ctx, stop := signal.NotifyContext(context.Background(), tuner.StopSignals...)
	context.AfterFunc(ctx, stop)
	err := stopped(ctx, dispatch(ctx, os.Args[1:]))
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

// stopped names the signal in an error that only says "context
// canceled" because a signal ended ctx.
func stopped(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w (%v)", err, context.Cause(ctx))
}

func dispatch(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "-help", "--help":
			if len(args) > 1 && args[0] == "help" {
				if c, ok := commands[args[1]]; ok {
					return c.run(ctx, []string{"--help"})
				}
				return usagef("help: unknown command %q: accepted %s", args[1], strings.Join(commandNames(), ", "))
			}
			printHelp(os.Stdout)
			return nil
		case "version", "--version", "-version":
			fmt.Println(versionLine())
			return nil
		}
		if c, ok := commands[args[0]]; ok {
			return c.run(ctx, args[1:])
		}
		if !strings.HasPrefix(args[0], "-") {
			return usagef("unknown command %q: accepted %s, or the tune's flags (autotune --help)", args[0],
				strings.Join(commandNames(), ", "))
		}
	}
	tune, ok := commands["tune"]
	if !ok {
		return errors.New("tuning is not built into this binary")
	}
	return tune.run(ctx, args)
}

// parseArgs parses a subcommand's flags, before or after its positional
// arguments, and allows at most maxArgs of those (left in fs.Args()).
// help is true after --help (the usage was printed); a bad flag or
// argument is a one-line usage error (exit 2).
func parseArgs(fs *flag.FlagSet, args []string, maxArgs int) (help bool, err error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(out)
				usage()
				return true, nil
			}
			return false, usagef("%s: %v (autotune %s --help lists the flags)", fs.Name(), err, fs.Name())
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0)) // "-" is an argument, the flags may go on after it
		args = fs.Args()[1:]
	}
	fs.SetOutput(out)
	if err := fs.Parse(positional); err != nil || len(positional) > maxArgs {
		extra := ""
		if len(positional) > maxArgs {
			extra = positional[maxArgs]
		}
		if maxArgs == 0 {
			return false, usagef("%s: unexpected argument %q: it takes flags only", fs.Name(), extra)
		}
		return false, usagef("%s: unexpected argument %q: it takes %d", fs.Name(), extra, maxArgs)
	}
	return false, nil
}

// commandNames are the registered commands' names, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// printHelp writes autotune's help: the tune flags, then one line per
// command, the descriptions in one column.
func printHelp(w io.Writer) {
	printTuneHelp(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands (autotune <command> --help):")
	names := commandNames()
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].short)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "exit codes: 0 ok, 1 failure, 2 usage")
}
