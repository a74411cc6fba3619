import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Words for an error from Foundation's file APIs or a system call, to put in a sentence that says
/// what failed: "permission denied", "no space left on device" — never Foundation's own text
/// ("Error Domain=NSCocoaErrorDomain Code=513 …", "The operation could not be completed").
public enum SystemErrorText {
    /// What to print for any error: its own description, except Foundation's file and POSIX
    /// errors, which become "PATH: reason" (the path when the error names one).
    public static func message(_ error: any Error) -> String {
        guard isFoundationError(error) else { return "\(error)" }
        let bridged = error as NSError
        let verb =
            bridged.domain != NSCocoaErrorDomain
            ? "a file operation failed"
            : (256..<512).contains(bridged.code)
                ? "cannot read"
                : (512..<1024).contains(bridged.code) ? "cannot write" : "a file operation failed"
        guard let path = path(of: error) else {
            return "\(verb): \(describe(error)); check the paths given and their permissions"
        }
        let subject = verb == "a file operation failed" ? "\(verb) on \(path)" : "\(verb) \(path)"
        return "\(subject): \(describe(error)); check the path and its permissions"
    }

    /// Whether this is one of Foundation's own errors (whose description is not for users).
    public static func isFoundationError(_ error: any Error) -> Bool {
        if error is CocoaError { return true }
        let domain = (error as NSError).domain
        return domain == NSCocoaErrorDomain || domain == NSPOSIXErrorDomain
    }

    /// The reason alone ("permission denied"), for a sentence that already names the path.
    public static func describe(_ error: any Error) -> String {
        guard isFoundationError(error) else { return "\(error)" }
        // Foundation's vaguest answers when a folder in the path is a file: say that.
        if let path = path(of: error), let blocker = fileInTheWay(of: path) {
            return blocker == path ? "it is a file, not a folder" : "\(blocker) is a file, not a folder"
        }
        if let text = posixReason(error) { return text }
        let bridged = error as NSError
        guard bridged.domain == NSCocoaErrorDomain else { return "error \(bridged.code)" }
        switch CocoaError.Code(rawValue: bridged.code) {
        case .fileNoSuchFile, .fileReadNoSuchFile: return "no such file or folder"
        case .fileReadNoPermission, .fileWriteNoPermission: return "permission denied"
        case .fileWriteOutOfSpace: return "no space left on device"
        case .fileWriteVolumeReadOnly: return "read-only file system"
        case .fileWriteFileExists: return "something of that name already exists"
        case .fileReadTooLarge: return "the file is too large"
        case .fileReadInapplicableStringEncoding, .fileReadUnknownStringEncoding: return "not UTF-8 text"
        case .fileReadCorruptFile, .propertyListReadCorrupt: return "damaged, or not in the expected format"
        case .fileWriteInvalidFileName: return "not a valid file name"
        case .fileLocking: return "the file is locked"
        default: return "error \(bridged.code) from the file system"
        }
    }

    /// The path a Foundation error names.
    static func path(of error: any Error) -> String? {
        let info = (error as NSError).userInfo
        if let path = info[NSFilePathErrorKey] as? String { return path }
        if let url = info[NSURLErrorKey] as? URL, url.isFileURL { return url.path }
        return nil
    }

    /// The path itself or its nearest existing ancestor when that is not a folder (a file where a
    /// folder should be): nil when the path is fine in that respect.
    ///
    /// It looks at the machine's own files: the error came from them.
    static func fileInTheWay(of path: String) -> String? {
        let files = LiveFileSystem()
        var candidate = URL(fileURLWithPath: path).standardizedFileURL
        var first = true
        while candidate.path != "/" {
            var isDirectory: ObjCBool = false
            if files.fileExists(atPath: candidate.path, isDirectory: &isDirectory) {
                if isDirectory.boolValue { return nil }
                // The path itself as a file is only "in the way" when a folder was wanted: callers
                // that write a file there get Foundation's own reason.
                return first ? nil : candidate.path
            }
            first = false
            candidate.deleteLastPathComponent()
        }
        return nil
    }

    /// The POSIX reason behind an error (`errno` text), when there is one.
    public static func posixReason(_ error: any Error) -> String? {
        let bridged = error as NSError
        if bridged.domain == NSPOSIXErrorDomain { return posix(Int32(bridged.code)) }
        if let underlying = bridged.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain
        {
            return posix(Int32(underlying.code))
        }
        return nil
    }

    /// `strerror`, starting lower case to read inside a sentence: "permission denied".
    public static func posix(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        guard let first = text.first else { return "error \(code)" }
        return first.lowercased() + text.dropFirst()
    }

    /// What a file that is not a regular one is, for a sentence: "a FIFO", "a folder".
    public static func kind(_ type: FileAttributeType) -> String {
        switch type {
        case .typeDirectory: return "a folder"
        case .typeSymbolicLink: return "a symbolic link"
        case .typeCharacterSpecial, .typeBlockSpecial: return "a device"
        case .typeSocket: return "a socket"
        case .typeRegular: return "a regular file"
        // Foundation has no name for a FIFO (named pipe): it is the one left.
        default: return "a FIFO or another special file"
        }
    }
}
