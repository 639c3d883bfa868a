// Package qa is an example QA suite, to copy: it drives Miniapp Host
// through W3C WebDriver (WebKitWebDriver starting `miniapp-host open
// --webdriver`, driven with github.com/tebeka/selenium) and answers the
// host's consent screen through the automation channel (package
// automation/client), as docs/webdriver.md describes.
//
// Its tests carry the build tag qa and need a running playground and
// driver, which examples/qa/run.sh starts and hands over in QA_*
// environment variables:
//
//	xvfb-run -a examples/qa/run.sh go
package qa
