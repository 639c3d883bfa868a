package catalog

// The catalog's contents, as docs/service.md §2.1 to §2.5 list them. Type names
// are templates: "{base_url}", "{signing_origin}" and "{invoicing_origin}"
// are filled in from Endpoints by New.

// scopeDefs are the 12 scopes of docs/service.md §2.1, in its order, and the
// two of FAPI Grant Management: name and meaning. All belong to the banking
// API at {base_url}.
var scopeDefs = [][2]string{
	{"addresses:read", "Read profile addresses"},
	{"addresses:write", "Create and update profile addresses"},
	{"bank_accounts.movements:read", "Read the subject's bank account movements"},
	{"bank_accounts:read", "Read the subject's current and future bank accounts"},
	{"email", "Read the profile email claim"},
	{"identities:read", "Read the subject's identity data"},
	{"offline_access", "Keep access while the subject is away"},
	{"openid", "Authenticate with OpenID Connect"},
	{"organizations:list", "List the names of the subject's organizations"},
	{"phone", "Read the profile phone claim"},
	{"profile", "Read the standard profile claims"},
	{"profile:write", "Update the standard profile"},
	// This project's two more (docs/service.md §2.1, "This project"): the
	// scopes of FAPI Grant Management for OAuth 2.0 §6.1 (Query) and §6.2
	// (Revoke), for tokens a client uses at the grant management endpoint
	// to read or revoke its own grants (docs/authserver.md, "Grant
	// management").
	{"grant_management_query", "Read the grants you gave this client (FAPI Grant Management)"},
	{"grant_management_revoke", "Revoke the grants you gave this client (FAPI Grant Management)"},
}

// typeDef is a Type before its placeholders are filled in.
type typeDef struct {
	key           string
	nameTemplate  string
	meaning       string
	provider      Provider
	companyScoped bool
	actions       []Action
}

// typeDefs are the 8 authorization_details types of docs/service.md §2.3 to §2.5.
var typeDefs = []typeDef{
	{
		key: "bank_account", nameTemplate: "bank_account",
		meaning:  "Use the subject's bank accounts",
		provider: Banking,
		actions: []Action{ // docs/service.md §2.3, "Actions"
			{"read", "Read selected accounts"},
			{"read_movements", "Read selected account movements"},
			{"create_deposit_intent", "Create deposit intents"},
			{"read_deposit_intents", "Read deposit intents"},
			{"create_withdrawal_intent", "Create withdrawal intents"},
			{"execute_withdrawal", "Execute withdrawals"},
			{"read_withdrawal_intents", "Read withdrawal intents"},
			{"close", "Close the service application's deposit collections"},
		},
	},
	{
		key: "automatic-charge", nameTemplate: "{base_url}/authorization-details/automatic-charge",
		meaning:  "Charge the Company's accounts automatically",
		provider: Banking, companyScoped: true,
		actions: []Action{ // docs/service.md §2.4, "Actions"
			{"read", "Read selected paying accounts"},
			{"create_deposit_intent", "Create funding deposits"},
			{"read_deposit_intents", "Read funding progress"},
			{"create_automatic_charge", "Create automatic charges"},
			{"execute_automatic_charge", "Execute automatic charges"},
			{"read_automatic_charges", "Read automatic charges"},
			{"close", "Close the service application's deposit collections"},
		},
	},
	{
		key: "company-addresses", nameTemplate: "{base_url}/authorization-details/company-addresses",
		meaning:  "Read the Company addresses",
		provider: Banking, companyScoped: true,
		actions: []Action{{"read", "Read the Company addresses"}},
	},
	{
		key: "company-identity", nameTemplate: "{base_url}/authorization-details/company-identity",
		meaning:  "Read the Company legal identifier and country",
		provider: Banking, companyScoped: true,
		actions: []Action{{"read", "Read the Company legal identifier and country"}},
	},
	{
		key: "company-key", nameTemplate: "{signing_origin}/authorization-details/company-key",
		meaning:  "Create the Company signing key",
		provider: Signing, companyScoped: true,
		actions: []Action{{"create", "Create the Company signing key"}},
	},
	{
		key: "signatures", nameTemplate: "{signing_origin}/authorization-details/signatures",
		meaning:  "Sign with the Company signing key",
		provider: Signing, companyScoped: true,
		actions: []Action{{"create", "Sign with the Company signing key"}},
	},
	{
		key: "signing-key", nameTemplate: "{signing_origin}/authorization-details/signing-key",
		meaning:  "Read the Company signing key readiness and public key",
		provider: Signing, companyScoped: true,
		actions: []Action{{"read", "Read the Company signing key readiness and public key"}},
	},
	{
		key: "documents", nameTemplate: "{invoicing_origin}/authorization-details/documents",
		meaning:  "Read and create the Company's documents",
		provider: Invoicing, companyScoped: true,
		actions: []Action{{"read", "Read documents"}, {"create", "Create documents"}},
	},
}

// pairedTypes must be requested together (docs/service.md §2.5, "Additional rule").
var pairedTypes = [2]string{"company-identity", "company-addresses"}
