package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func init() {
	register(&command{name: "completion", short: "print a shell completion script (bash, zsh or fish)",
		run: func(_ context.Context, args []string) error { return completionMain(args, os.Stdout, os.Stderr) }})
}

const completionUsage = `usage: autotune completion bash|zsh|fish

Prints a completion script for the shell: the commands, the tune's flags,
and the values of --formats, --model and --arch. For example:
  source <(autotune completion bash)
  autotune completion fish > ~/.config/fish/completions/autotune.fish
`

// completionWords are what the scripts offer.
type completionWords struct {
	commands, flags, formats, models, archs []string
}

func words() completionWords {
	var f tuneFlags
	fs := newTuneFlagSet(&f)
	var w completionWords
	fs.VisitAll(func(fl *flag.Flag) { w.flags = append(w.flags, "--"+fl.Name) })
	w.commands = commandNames()
	w.formats = variants.FormatNames
	w.models = presetNames()
	w.archs = append(space.KnownArchs(), "auto")
	sort.Strings(w.flags)
	return w
}

func completionMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("completion", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, completionUsage) }
	if help, err := parseArgs(fs, args, 1); help || err != nil {
		return err
	}
	w := words()
	j := func(s []string) string { return strings.Join(s, " ") }
	switch fs.Arg(0) {
	case "bash":
		_, err := fmt.Fprintf(stdout, `# bash completion for autotune
_autotune() {
    local cur prev
    cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"
    case "$prev" in
        --formats|--format) COMPREPLY=($(compgen -W "%s" -- "$cur")); return ;;
        --model) COMPREPLY=($(compgen -W "%s" -- "$cur")); return ;;
        --arch) COMPREPLY=($(compgen -W "%s" -- "$cur")); return ;;
        --cache|--gguf) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "%s %s" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "%s" -- "$cur"))
    fi
}
complete -F _autotune autotune
`, j(w.formats), j(w.models), j(w.archs), j(w.commands), j(w.flags), j(w.flags))
		return err
	case "zsh":
		_, err := fmt.Fprintf(stdout, `#compdef autotune
# zsh completion for autotune
_autotune() {
    case "${words[CURRENT-1]}" in
        --formats|--format) compadd %s; return ;;
        --model) compadd %s; return ;;
        --arch) compadd %s; return ;;
        --cache|--gguf) _files; return ;;
    esac
    if (( CURRENT == 2 )); then compadd %s %s; else compadd -- %s; fi
}
compdef _autotune autotune
`, j(w.formats), j(w.models), j(w.archs), j(w.commands), j(w.flags), j(w.flags))
		return err
	case "fish":
		var b strings.Builder
		b.WriteString("# fish completion for autotune\n")
		for _, c := range w.commands {
			fmt.Fprintf(&b, "complete -c autotune -n '__fish_use_subcommand' -a %s -d %q\n", c, commands[c].short)
		}
		for _, f := range w.flags {
			fmt.Fprintf(&b, "complete -c autotune -l %s\n", strings.TrimPrefix(f, "--"))
		}
		fmt.Fprintf(&b, "complete -c autotune -l formats -x -a %q\n", j(w.formats))
		fmt.Fprintf(&b, "complete -c autotune -l model -x -a %q\n", j(w.models))
		fmt.Fprintf(&b, "complete -c autotune -l arch -x -a %q\n", j(w.archs))
		_, err := io.WriteString(stdout, b.String())
		return err
	case "":
		return usagef("completion: name a shell: bash, zsh or fish")
	}
	return usagef("completion: shell %q: accepted bash, zsh, fish", fs.Arg(0))
}
