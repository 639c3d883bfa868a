package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// logFlags are --log-format and --log-level, of every command that runs a
// reference server (serve, playground, dev; docs/deploy.md, "Logs").
type logFlags struct {
	format, level *string
	set           func() bool // either flag was given
}

func addLogFlags(fs *flag.FlagSet) *logFlags {
	l := &logFlags{
		format: fs.String("log-format", "text", "the server's log lines on stderr: text (key=value) or json (one object a line); giving it turns the log on"),
		level:  fs.String("log-level", "info", "the least level logged: debug, info (each audit event), warn or error; giving it turns the log on"),
	}
	l.set = func() bool {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "log-format" || f.Name == "log-level" })
		return given
	}
	return l
}

// check reports a bad value of either flag, before anything starts.
func (l *logFlags) check() error {
	_, err := l.logger(io.Discard, false)
	return err
}

// logger is the server's logger writing to w, or nil when the log is off
// (neither flag given, and not on); a bad value is an error naming the
// flag and the values it takes.
func (l *logFlags) logger(w io.Writer, on bool) (*slog.Logger, error) {
	var level slog.Level
	switch *l.level {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", *l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch *l.format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: use text or json", *l.format)
	}
	if !on && !l.set() {
		return nil, nil
	}
	return slog.New(h), nil
}
