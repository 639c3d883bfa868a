// Package qa is an example QA suite, to copy: it drives Miniapp Host
// through W3C WebDriver only (`miniapp-host webdriver`, the front that
// starts `miniapp-host open --webdriver`, driven with
// github.com/tebeka/selenium) and answers the host's consent screen with
// the front's extension commands (/session/{id}/miniapp-host/consent...),
// as docs/webdriver.md describes.
//
// Its tests carry the build tag qa and need a running playground and
// front, which examples/qa/run.sh starts and hands over in QA_*
// environment variables:
//
//	xvfb-run -a examples/qa/run.sh go
package qa
