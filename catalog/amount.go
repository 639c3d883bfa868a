package catalog

import "regexp"

// AmountPattern is the form of every amount (docs/service.md §2.2 rule 5): a string of
// 1 to 15 digits with no leading zero. The catalog's schemas spell the same
// pattern in assets/schemas/catalog/common.json; a test holds the two equal.
const AmountPattern = `^[1-9][0-9]{0,14}$`

var amountRE = regexp.MustCompile(AmountPattern)

// IsAmount reports whether s is an amount as docs/service.md §2.2 rule 5 writes one,
// for the places that check amounts outside a detail: a charge, a document.
func IsAmount(s string) bool { return amountRE.MatchString(s) }
