// Tells the server which time zone this browser is in, so deadlines and other times are
// shown in it (mrtrweb/accounts/timezones.py reads the cookie; a zone chosen on the account
// page wins over it). Without JavaScript, times are in the account's zone or UTC, as the
// pages say.
(function () {
  "use strict";
  var zone;
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch (error) {
    return;
  }
  // IANA names ("Europe/Oslo") are cookie-safe as they are; anything else is not sent.
  if (!zone || zone.length > 64 || !/^[A-Za-z0-9_+\-\/]+$/.test(zone)) return;
  var found = document.cookie.match(/(?:^|;\s*)mrtrweb_tz=([^;]*)/);
  if (found && found[1] === zone) return;
  document.cookie =
    "mrtrweb_tz=" + zone + "; path=/; max-age=31536000; SameSite=Lax" +
    (window.location.protocol === "https:" ? "; Secure" : "");
})();
