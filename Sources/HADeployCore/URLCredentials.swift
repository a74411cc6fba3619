/// Credentials written into a URL (`http://user:password@host`, an `HA_SERVER` with basic auth) are
/// as secret as a token: everything hadeploy shows (stdout, stderr, logs, reports) passes through
/// `redact`, which keeps the user name and replaces the password with `***` (a user name alone, as in
/// `ssh://builder@mac-mini`, is an address, not a secret, and stays).
public enum URLCredentials {
    /// `text` with every URL's user information redacted; also inside JSON, where `/` may be `\/`.
    public static func redact(_ text: String) -> String {
        // A byte scan: `contains("@")` goes through Foundation's locale-aware search, which was half of
        // what writing a JSON event cost (every line passes here, twice).
        guard text.utf8.contains(UInt8(ascii: "@")) else { return text }
        let scalars = Array(text.unicodeScalars)
        var output = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            guard let authority = authorityStart(scalars, index) else {
                output.append(scalars[index])
                index += 1
                continue
            }
            output.append(contentsOf: scalars[index..<authority])
            var end = authority
            while end < scalars.count, !isAuthorityEnd(scalars[end]) { end += 1 }
            // The last `@` of the authority ends the user information (a password may hold `@`).
            if let at = scalars[authority..<end].lastIndex(of: "@"), at > authority {
                let userinfo = scalars[authority..<at]
                if let colon = userinfo.firstIndex(of: ":") {
                    output.append(contentsOf: scalars[authority..<colon])
                    output.append(contentsOf: ":\(Secret.redacted)".unicodeScalars)
                    output.append(contentsOf: scalars[at..<end])
                } else {
                    output.append(contentsOf: scalars[authority..<end])
                }
            } else {
                output.append(contentsOf: scalars[authority..<end])
            }
            index = end
        }
        return String(output)
    }

    /// Where the authority starts when a `://` (or JSON's `:\/\/`) begins at `index`.
    private static func authorityStart(_ s: [Unicode.Scalar], _ index: Int) -> Int? {
        guard s[index] == ":" else { return nil }
        for separator in [["/", "/"], ["\\", "/", "\\", "/"]] as [[Unicode.Scalar]] {
            let end = index + 1 + separator.count
            if end <= s.count, Array(s[(index + 1)..<end]) == separator { return end }
        }
        return nil
    }

    private static func isAuthorityEnd(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "/", "\\", "?", "#", "\"", "'", "<", ">", "`", " ", "\t", "\n", "\r": return true
        default: return scalar.properties.isWhitespace
        }
    }
}
