/// POSIX shell quoting for values put into remote command lines.
public enum ShellQuote {
    /// `'...'` with embedded single quotes as `'\''`; safe for any byte string.
    public static func quote(_ value: String) -> String {
        if !value.isEmpty,
            value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "/._-+:=@%,".contains($0)) })
        {
            return value
        }
        return "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
