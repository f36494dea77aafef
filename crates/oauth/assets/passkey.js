// fieldauth passkeys: the one script of the pages, served from our origin under
// `script-src 'self'`. It drives WebAuthn for the buttons that ask for it:
//
//   <form method="post" action="FINISH_URL">
//     ...the form's own fields (csrf, tenant, request, name...)...
//     <input type="hidden" name="ceremony">
//     <input type="hidden" name="credential">
//     <button type="button" data-passkey="signin|verify|register" data-start="START_URL" hidden>
//     <p data-passkey-status role="status"></p>   (optional: where failures are said)
//   </form>
//
// On click it posts the form's fields (form-urlencoded, same origin, the CSRF field
// included) to START_URL, which answers {ceremony, publicKey}; it runs
// navigator.credentials.get (signin, verify) or .create (register) with the binary fields
// decoded from base64url, writes the ceremony handle and the credential (JSON, binary fields
// base64url) into the hidden fields, and submits the form. Without WebAuthn, or on a server
// addressed by IP, the buttons stay hidden; without this script nothing passkey-related
// shows and password sign-in works.
(function () {
  "use strict";

  // WebAuthn needs a domain: browsers refuse an IP address as relying party id, so on a
  // server addressed by IP the buttons would only fail.
  var host = window.location.hostname;
  var byAddress = /^[0-9.]+$/.test(host) || host.indexOf(":") >= 0 || host.charAt(0) === "[";
  if (!window.PublicKeyCredential || !window.fetch || byAddress) {
    return;
  }

  function toBytes(text) {
    var base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    while (base64.length % 4) {
      base64 += "=";
    }
    var binary = atob(base64);
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) {
      bytes[i] = binary.charCodeAt(i);
    }
    return bytes.buffer;
  }

  function toText(buffer) {
    if (!buffer) {
      return null;
    }
    var bytes = new Uint8Array(buffer);
    var binary = "";
    for (var i = 0; i < bytes.length; i++) {
      binary += String.fromCharCode(bytes[i]);
    }
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function withIds(list) {
    return (list || []).map(function (item) {
      var copy = Object.assign({}, item);
      copy.id = toBytes(item.id);
      return copy;
    });
  }

  // The options as the server sent them, with the binary fields as ArrayBuffers.
  function decodeOptions(mode, publicKey) {
    var options = Object.assign({}, publicKey);
    options.challenge = toBytes(publicKey.challenge);
    if (mode === "register") {
      options.user = Object.assign({}, publicKey.user, { id: toBytes(publicKey.user.id) });
      options.excludeCredentials = withIds(publicKey.excludeCredentials);
    } else {
      options.allowCredentials = withIds(publicKey.allowCredentials);
    }
    return options;
  }

  // The credential as webauthn-rs reads it: the binary fields in base64url.
  function encodeCredential(credential) {
    var response = credential.response;
    var encoded = {
      id: credential.id,
      rawId: toText(credential.rawId),
      type: credential.type,
      extensions: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {},
      response: { clientDataJSON: toText(response.clientDataJSON) },
    };
    if (response.attestationObject) {
      encoded.response.attestationObject = toText(response.attestationObject);
      if (response.getTransports) {
        encoded.response.transports = response.getTransports();
      }
    } else {
      encoded.response.authenticatorData = toText(response.authenticatorData);
      encoded.response.signature = toText(response.signature);
      encoded.response.userHandle = toText(response.userHandle);
    }
    return JSON.stringify(encoded);
  }

  function say(form, message) {
    var status = form.querySelector("[data-passkey-status]");
    if (status) {
      status.textContent = message;
    }
  }

  function field(form, name) {
    var input = form.querySelector('input[name="' + name + '"]');
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      form.appendChild(input);
    }
    return input;
  }

  function run(button) {
    var form = button.form;
    var mode = button.getAttribute("data-passkey");
    if (!form) {
      return;
    }
    if (mode === "register" && !form.reportValidity()) {
      return;
    }
    var body = new URLSearchParams();
    new FormData(form).forEach(function (value, name) {
      if (name !== "ceremony" && name !== "credential") {
        body.append(name, value);
      }
    });
    button.disabled = true;
    say(form, "");
    fetch(button.getAttribute("data-start"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
      body: body.toString(),
    })
      .then(function (response) {
        return response.json().then(function (answer) {
          if (!response.ok) {
            throw new Error(answer.error_description || "The passkey could not be used.");
          }
          return answer;
        });
      })
      .then(function (answer) {
        var publicKey = decodeOptions(mode, answer.publicKey);
        var asked = mode === "register"
          ? navigator.credentials.create({ publicKey: publicKey })
          : navigator.credentials.get({ publicKey: publicKey });
        return asked.then(function (credential) {
          field(form, "ceremony").value = answer.ceremony;
          field(form, "credential").value = encodeCredential(credential);
          form.submit();
        });
      })
      .catch(function (error) {
        button.disabled = false;
        say(form, error && error.name === "NotAllowedError"
          ? "The passkey was not used: it was cancelled or timed out."
          : (error && error.message) || "The passkey could not be used.");
      });
  }

  function start() {
    var buttons = document.querySelectorAll("button[data-passkey]");
    Array.prototype.forEach.call(buttons, function (button) {
      button.hidden = false;
      button.addEventListener("click", function () {
        run(button);
      });
    });
    var sections = document.querySelectorAll("[data-passkey-section]");
    Array.prototype.forEach.call(sections, function (section) {
      section.hidden = false;
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
