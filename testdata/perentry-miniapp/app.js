"use strict";
document.getElementById("ask").addEventListener("click", function () {
  if (!window.miniapp || !window.miniapp.inHost) {
    document.body.dataset.state = "no-host";
    return;
  }
  window.miniapp.authorize({
    scope: "openid profile email",
    authorization_details: [{ type: "bank_account", actions: ["read"], subject: { type: "profile" }, selection: { min: 1, max: 1 } }]
  }).then(function (tok) {
    document.getElementById("result").textContent = JSON.stringify({
      scope: tok.scope, authorization_details: tok.authorization_details, has_access_token: !!tok.access_token });
    document.body.dataset.state = "signed-in";
  }, function (err) {
    document.getElementById("result").textContent = err.code + ": " + err.message;
    document.body.dataset.state = "error";
  });
});
