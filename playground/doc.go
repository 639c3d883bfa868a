// Package playground is what `miniapp-host playground` (and `make run`)
// starts: the embedded reference authorization server with its dashboard and
// providers, the three demo Miniapps (confidential, public, and FAPI 2.0),
// four deliberately broken demo Miniapps that the resolver must reject, the
// automation channel, and a launcher page on its own loopback origin; and a
// developer's own Miniapp registered, launched and reloaded (Playground.Dev,
// `miniapp-host dev`).
//
// The launcher lists the Miniapps, opens any Miniapp by origin and id,
// shows the resolver's staged report of each launch, and draws a flow
// inspector: a timeline of the automation channel's events (resolution
// stages, navigation decisions with their rule, consent, codes and tokens by
// fingerprint, the token's decoded claims, the grant read from
// GET {base_url}/authorization, cookies synced by name).
//
// The package has no cgo and opens no window. Mounting a Miniapp in a desktop
// window goes through [Opener], which [Window] implements over a host window
// that the command makes with an engine (package host never imports this
// one); without one
// every launch still resolves and reports, and the launcher says that this
// process has no window and offers the Miniapp's URL for a plain browser tab,
// where the demo Miniapps run unchanged against the server's web sign-in and
// consent pages.
//
// Files: playground.go (Config, Start, Close), ports.go (the default
// addresses), world.go (the servers and the demo Miniapps: with dev.go, the
// files that use package authserver, and the one that uses demoapps),
// broken.go (the broken Miniapps), launch.go (resolve, report, Opener),
// observe.go (token responses of the demo backends, decoded for the
// inspector), controller.go (the automation channel's commands), api.go (the
// launcher's HTTP API and its gate, origin.Gate), published.go, reviews.go,
// explain.go, connected.go and serverevents.go (the launcher's panels over
// the dashboard and the server), icons.go (a manifest's icons), device.go (the device shown),
// dev.go (a developer's own Miniapp), window.go (the window adapter,
// Window), windowsize.go (the window's size, remembered between runs).
package playground
