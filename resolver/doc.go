// Package resolver turns a Miniapp id and origin into a trusted Miniapp, or
// into a report that says which stage refused it, where, and how to fix it
// (docs/service.md §2.9, §2.10, §4.2, §4.3 and §7).
//
// A resolve runs seven stages, in order:
//
//	origin    the requested origin is a bare origin; https, or http on loopback unless Config.Insecure
//	download  GET <origin>/miniapp.webmanifest within the limits of Config
//	parse     the body is one JSON value
//	schema    the manifest schema (assets/schemas/resolver/manifest.json); every violation is listed
//	identity  the manifest id equals the requested id
//	client    GET <dashboard>/api/oauth/clients/<client_id>, its schema, and oauth.auth_url for a confidential client
//	origins   start_url and oauth.auth_url, resolved against the manifest URL as a browser does, have the
//	          manifest's origin and are listed in allowed_origins
//
// A failed stage does not end the resolve: every later stage that still has
// its input runs, so that one run reports everything it can establish and a
// developer does not fix a manifest one stage at a time. Schema violations do
// not stop identity, client and origins from checking the members the schema
// did not refuse; a failed client stage leaves origins its same-origin rules
// (the stage reports failed when they fail, else skipped: "ok" always means
// every rule of a stage ran and passed).
// Only a stage whose output the next needs ends it: no usable origin, no
// download, no JSON. Stages that did not run are "skipped", with a note
// saying why. CheckManifest checks a manifest without a client configuration.
//
// The result is a *Miniapp, a *Rejection (the Miniapp must not be opened; docs/service.md
// §4.3 step 4), or an *Undecided error when no answer could be had (a 5xx, a
// timeout, a refused or reset connection). Every URL and origin decision is
// made by package origin; nothing here compares URLs as strings.
//
// HTTP: only status 200 is accepted, with a Content-Type of application/json
// or application/manifest+json (a charset parameter, when present, must be
// utf-8). Bodies are capped at Config.MaxBytes while they are read. Redirects
// (301, 302, 303, 307, 308) are followed only within the origin of the first
// request, at most Config.MaxRedirects times; a redirect to another origin
// is a rejection, because the manifest's origin is the Miniapp's identity.
// The manifest URL used for resolving start_url and auth_url is the URL the
// manifest was finally served from, as in a browser. Responses are cached in
// memory per Resolver, honouring Cache-Control (max-age, no-cache, no-store)
// and revalidating with If-None-Match when an ETag was given.
package resolver
