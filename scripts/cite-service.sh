#!/usr/bin/env bash
# Rewrites citations of the service contract written the old way, the word "spec" (or
# "spec section(s)") and section numbers, such as "spec N.N rule N", "spec sections N.N and N.N",
# "(spec N.N, N.N)", into the form docs/service.md defines: "docs/service.md §2.2 rule 3",
# "docs/service.md §2.9 and §4.3", "(docs/service.md §4.1, §5.6)", in every tracked text file.
# Run it from anywhere in the checkout; it prints the files it changed. Idempotent: a second run
# changes nothing. Prose such as "the spec's routes" it leaves for a person; a bare citation it
# missed fails TestReferencesResolve (references_test.go).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

git ls-files -z -- '*.go' '*.md' '*.json' '*.js' '*.html' '*.css' '*.sh' '*.yml' '*.yaml' '*.txt' 'Makefile' \
	':!docs/service.md' ':!scripts/cite-service.sh' ':!references_test.go' |
	xargs -0 perl -0777 -i -ne '
		my $orig = $_;
		# A section number, then the items cited inside it, kept as written.
		my $sec  = qr/[1-9](?:\.[0-9]{1,2})?(?![0-9.]*[0-9])/;
		# What separates two cited sections of one list.
		my $sep  = qr/(?:,\s+and\s+|,\s+|\s+and\s+|\s+to\s+|\s+or\s+)/;
		# "spec" may end a comment line and the number begin the next one.
		my $gap  = qr/(?:[ \t]+|[ \t]*\n[ \t]*(?:\/\/|#|\*)?[ \t]*)/;
		s{\b[Ss]pec(?:[ \t]+sections?)?($gap)($sec)((?:$sep$sec(?![0-9A-Za-z]))*)}{
			my ($g, $first, $rest) = ($1, $2, $3);
			$rest =~ s/($sep)($sec)/$1\xc2\xa7$2/g;
			"docs/service.md$g\xc2\xa7$first$rest"
		}ge;
		if ($_ ne $orig) { print STDERR "$ARGV\n" }
		print;
	' 2>&1 >/dev/null | sort -u || true
