/// The installed app as the device reports it: directories and a SHA-256 per file.
///
/// Reads the output of `sha256sum` / `shasum -a 256` (`HEX  ./path`) and of `openssl dgst -sha256`
/// (`SHA256(./path)= HEX`, OpenSSL 3 says `SHA2-256`), plus `D ./dir` lines for directories. A line it
/// cannot read (a name `sha256sum` escaped) leaves that file out, so it is sent again: never wrongly skipped.
struct RemoteManifest: Sendable, Equatable {
    var files: [String: String] = [:]
    var directories: Set<String> = []

    var isEmpty: Bool { files.isEmpty && directories.isEmpty }

    init(files: [String: String] = [:], directories: Set<String> = []) {
        self.files = files
        self.directories = directories
    }

    init(listing: String) {
        for line in listing.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) {
            if line.hasPrefix("D ") {
                if let path = Self.relative(String(line.dropFirst(2))), !path.isEmpty {
                    directories.insert(path)
                }
            } else if let (path, hash) = Self.coreutilsLine(line) ?? Self.opensslLine(line) {
                files[path] = hash
            }
        }
    }

    private static func coreutilsLine(_ line: String) -> (String, String)? {
        guard line.count > 66, !line.hasPrefix("\\") else { return nil }
        let hash = String(line.prefix(64))
        guard isHex(hash) else { return nil }
        let rest = line.dropFirst(64)
        guard rest.hasPrefix("  ") || rest.hasPrefix(" *"), let path = relative(String(rest.dropFirst(2)))
        else {
            return nil
        }
        return (path, hash)
    }

    private static func opensslLine(_ line: String) -> (String, String)? {
        guard let open = line.firstIndex(of: "("), let close = line.range(of: ")= ", options: .backwards)
        else {
            return nil
        }
        let hash = String(line[close.upperBound...]).lowercased()
        guard hash.count == 64, isHex(hash),
            let path = relative(String(line[line.index(after: open)..<close.lowerBound]))
        else { return nil }
        return (path, hash)
    }

    private static func relative(_ path: String) -> String? {
        if path == "." { return "" }
        return path.hasPrefix("./") ? String(path.dropFirst(2)) : nil
    }

    private static func isHex(_ text: String) -> Bool {
        text.allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }

    /// Reads one hash line (`hs FILE` output) for a single file.
    static func singleHash(_ output: String) -> String? {
        let line = output.split(separator: "\n").first.map(String.init) ?? ""
        if let close = line.range(of: ")= ", options: .backwards) {
            let hash = String(line[close.upperBound...]).lowercased()
            return hash.count == 64 && isHex(hash) ? hash : nil
        }
        let hash = String(line.prefix(64))
        return hash.count == 64 && isHex(hash) ? hash : nil
    }
}
