// One click: opening a login link (/login?token=...) signs in at once. The page posts its
// form, with the form's CSRF token and cookie, exactly as pressing "Sign in" does; a GET alone
// (a link preview, a mail scanner) signs nobody in, and a failed token is not posted again
// (the page then comes back without it).
"use strict";
(() => {
  const form = document.getElementById("login");
  const token = document.getElementById("token");
  if (form && token && form.dataset.auto === "yes" && token.value) form.submit();
})();
