package sandboxenv

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/homemount"
	"github.com/contextd/contextd/daemon/netview"
)

// New makes the builder from the configuration: the home view's setup
// (without one, no home directory, sandboxes see an empty tmpfs as their
// home) and the egress proxy's (without one, sandboxes have no network
// beyond their loopback, and every call says so). log, when set, is told
// what is missing and why; the daemon, `contextd sandbox show` and
// `contextd doctor` all start from here.
func New(cfg *config.Config, log *slog.Logger) *Builder {
	home, _ := os.UserHomeDir()
	b := &Builder{Config: cfg, HomeDir: home}
	b.Home, _ = NewHome(cfg, log)
	b.Net, b.NetErr = NewNet(cfg, log)
	return b
}

// orDiscard is log, or a logger that drops everything.
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// NewHome makes the home view's setup (nil, and why, when there is none).
func NewHome(cfg *config.Config, log *slog.Logger) (*homemount.Setup, error) {
	log = orDiscard(log)
	hs, err := homemount.NewSetup(cfg)
	if err != nil {
		log.Warn("no home view: calls see an empty $HOME", "err", err)
		return nil, err
	}
	if hs.Mode == homemount.Private {
		log.Warn("toolchain caches are private to each workspace: overlayfs is not available", "why", hs.ModeNote)
	}
	return hs, nil
}

// NewNet makes the egress proxy's setup (nil, and why, when there is none).
func NewNet(cfg *config.Config, log *slog.Logger) (*netview.Setup, error) {
	log = orDiscard(log)
	dirs, err := netview.DefaultDirs()
	if err != nil {
		log.Warn("no egress proxy: sandboxed commands have no network", "err", err)
		return nil, err
	}
	h, err := netview.HostOf()
	if err != nil {
		log.Warn("no egress proxy: sandboxed commands have no network", "err", err)
		return nil, err
	}
	setup, err := netview.NewSetup(cfg, h, dirs, log.With("part", "egress"))
	if err != nil {
		log.Warn("no egress proxy: sandboxed commands have no network", "err", err)
		return nil, err
	}
	for _, n := range setup.Notes() {
		log.Info("egress: default rules", "note", n)
	}
	return setup, nil
}

// ExpireCaches expires the cache layers now and every day after, until ctx
// ends (the daemon's life).
func (b *Builder) ExpireCaches(ctx context.Context, log *slog.Logger) {
	if b.Home == nil {
		return
	}
	expire := func() {
		if removed, err := b.Home.Layers.Expire(time.Now()); err != nil {
			log.Warn("cache layers: expiry", "err", err)
		} else if len(removed) > 0 {
			log.Info("cache layers expired", "removed", removed)
		}
	}
	go func() {
		expire()
		t := time.NewTicker(24 * time.Hour)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				expire()
			}
		}
	}()
}
