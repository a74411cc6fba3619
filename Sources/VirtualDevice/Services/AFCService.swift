import Foundation
import NIOCore

/// Apple File Conduit over a directory (PROTOCOL.md §4): `com.apple.afc` serves the media root,
/// `com.apple.crashreportcopymobile` the crash-report directory.
///
/// FileWrite payloads are streamed to disk as they arrive; a 1 MiB packet is never held whole.
struct AFCService {
    let root: URL
    let runtime: DeviceRuntime
    let stream: ByteStream

    enum Operation: UInt64 {
        case status = 1
        case data = 2
        case readDirectory = 3
        case removePath = 8
        case makeDirectory = 9
        case getFileInfo = 0xA
        case getDeviceInfo = 0xB
        case fileOpen = 0xD
        case fileOpenResult = 0xE
        case fileRead = 0xF
        case fileWrite = 0x10
        case fileSeek = 0x11
        case fileTell = 0x12
        case fileTellResult = 0x13
        case fileClose = 0x14
        case fileSetSize = 0x15
        case renamePath = 0x18
        case setFSBlockSize = 0x19
        case setSocketBlockSize = 0x1A
        case makeLink = 0x1C
        case removePathAndContents = 0x22
    }

    /// AFC error codes (libimobiledevice afc.h).
    enum Code: UInt64, Error {
        case success = 0
        case unknown = 1
        case invalidArgument = 7
        case objectNotFound = 8
        case objectIsDirectory = 9
        case permissionDenied = 10
        case unsupported = 15
        case objectExists = 16
        case ioError = 20
    }

    static let magic = Array("CFA6LPAA".utf8)
    /// Largest header-data part accepted (paths); FileWrite payloads are streamed, not limited here.
    static let maximumHeaderData = 64 * 1024

    final class OpenFile {
        let handle: FileHandle
        let url: URL
        init(handle: FileHandle, url: URL) {
            self.handle = handle
            self.url = url
        }
    }

    func run() async throws {
        var files: [UInt64: OpenFile] = [:]
        var nextHandle: UInt64 = 1
        var uploaded = 0
        var firstWrite: ContinuousClock.Instant?
        var lastWrite: ContinuousClock.Instant?
        defer {
            runtime.logger.debug("AFC connection ended after \(uploaded) uploaded bytes")
            for file in files.values { try? file.handle.close() }
            if let firstWrite, let lastWrite, uploaded > 0 {
                let duration = lastWrite - firstWrite
                let seconds =
                    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
                let statistics = VirtualUploadStatistics(bytes: uploaded, seconds: seconds)
                let runtime = self.runtime
                Task { await runtime.recordUpload(statistics) }
            }
        }
        while true {
            var header = try await stream.read(exactly: 40, timeout: .seconds(300))
            guard header.readBytes(length: 8) == Self.magic else {
                throw TransportError.protocolViolation("AFC packet without CFA6LPAA magic")
            }
            let entireLength = Int(header.readInteger(endianness: .little, as: UInt64.self)!)
            let thisLength = Int(header.readInteger(endianness: .little, as: UInt64.self)!)
            let packetNumber = header.readInteger(endianness: .little, as: UInt64.self)!
            let rawOperation = header.readInteger(endianness: .little, as: UInt64.self)!
            guard thisLength >= 40, entireLength >= thisLength, thisLength - 40 <= Self.maximumHeaderData,
                entireLength - thisLength <= 64 * 1024 * 1024
            else {
                throw TransportError.protocolViolation("AFC lengths \(entireLength)/\(thisLength)")
            }
            var headerData =
                thisLength > 40
                ? try await stream.read(exactly: thisLength - 40, timeout: .seconds(30)) : ByteBuffer()
            let payloadLength = entireLength - thisLength
            let operation = Operation(rawValue: rawOperation)
            runtime.logger.trace("AFC op \(rawOperation) packet \(packetNumber)")

            if operation == .fileWrite {
                let handle = headerData.readInteger(endianness: .little, as: UInt64.self) ?? 0
                let file = files[handle]
                if firstWrite == nil { firstWrite = .now }
                var remaining = payloadLength
                var failure: Code?
                while remaining > 0 {
                    let chunk = try await stream.read(upTo: min(remaining, 256 * 1024), timeout: .seconds(30))
                    remaining -= chunk.readableBytes
                    uploaded += chunk.readableBytes
                    if let file, failure == nil {
                        do {
                            try chunk.withUnsafeReadableBytes { try file.handle.write(contentsOf: $0) }
                        } catch {
                            failure = .ioError
                        }
                    }
                    if let limit = runtime.uploadDropThreshold, uploaded >= limit {
                        runtime.logger.info(
                            "dropUploadAfter fault: cutting the connection after \(uploaded) bytes")
                        stream.close()
                        throw TransportError.closed("dropUploadAfter fault")
                    }
                }
                lastWrite = .now
                try await replyStatus(
                    file == nil ? .invalidArgument : (failure ?? .success), packet: packetNumber)
                continue
            }
            // Other operations carry no meaningful payload; read and discard it.
            var remaining = payloadLength
            while remaining > 0 {
                let chunk = try await stream.read(upTo: remaining, timeout: .seconds(30))
                remaining -= chunk.readableBytes
            }
            guard let operation else {
                try await replyStatus(.unsupported, packet: packetNumber)
                continue
            }
            try await handle(
                operation, &headerData, packet: packetNumber, files: &files, nextHandle: &nextHandle)
        }
    }

    private func handle(
        _ operation: Operation, _ data: inout ByteBuffer, packet: UInt64, files: inout [UInt64: OpenFile],
        nextHandle: inout UInt64
    ) async throws {
        let fileManager = FileManager.default
        switch operation {
        case .getFileInfo:
            guard let url = resolve(Self.string(&data)) else {
                return try await replyStatus(.permissionDenied, packet: packet)
            }
            guard let info = Self.fileInfo(url) else {
                return try await replyStatus(.objectNotFound, packet: packet)
            }
            try await replyData(Self.pairs(info), packet: packet)
        case .readDirectory:
            guard let url = resolve(Self.string(&data)) else {
                return try await replyStatus(.permissionDenied, packet: packet)
            }
            guard let names = try? fileManager.contentsOfDirectory(atPath: url.path) else {
                return try await replyStatus(
                    Self.exists(url) ? .objectIsDirectory : .objectNotFound, packet: packet)
            }
            try await replyData(Self.nulTerminated([".", ".."] + names.sorted()), packet: packet)
        case .makeDirectory:
            guard let url = resolve(Self.string(&data)) else {
                return try await replyStatus(.permissionDenied, packet: packet)
            }
            do {
                try fileManager.createDirectory(at: url, withIntermediateDirectories: true)
                try await replyStatus(.success, packet: packet)
            } catch {
                try await replyStatus(.objectExists, packet: packet)
            }
        case .removePath, .removePathAndContents:
            guard let url = resolve(Self.string(&data)), url.path != root.path else {
                return try await replyStatus(.permissionDenied, packet: packet)
            }
            guard Self.exists(url) else { return try await replyStatus(.objectNotFound, packet: packet) }
            if operation == .removePath,
                let contents = try? fileManager.contentsOfDirectory(atPath: url.path),
                !contents.isEmpty
            {
                // The client turns code 1 into "directory not empty" (PROTOCOL.md §4.1).
                return try await replyStatus(.unknown, packet: packet)
            }
            do {
                try fileManager.removeItem(at: url)
                try await replyStatus(.success, packet: packet)
            } catch {
                try await replyStatus(.permissionDenied, packet: packet)
            }
        case .renamePath:
            let from = Self.string(&data)
            let to = Self.string(&data)
            guard let source = resolve(from), let destination = resolve(to) else {
                return try await replyStatus(.permissionDenied, packet: packet)
            }
            do {
                if Self.exists(destination) { try fileManager.removeItem(at: destination) }
                try fileManager.moveItem(at: source, to: destination)
                try await replyStatus(.success, packet: packet)
            } catch {
                try await replyStatus(Self.exists(source) ? .ioError : .objectNotFound, packet: packet)
            }
        case .makeLink:
            let type = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            let target = Self.string(&data)
            let linkName = Self.string(&data)
            // ideviceinstaller 1.1.1 sends the *host* path as the link name (PROTOCOL.md §4.4);
            // a real device then fails quietly inside its sandbox. Create it only when it resolves here.
            if type == 2, let link = resolve(linkName), !Self.exists(link) {
                try? fileManager.createSymbolicLink(atPath: link.path, withDestinationPath: target)
            }
            try await replyStatus(.success, packet: packet)
        case .getDeviceInfo:
            // The device's data partition (the same figures lockdown's disk_usage domain gives),
            // not the disk of the host the twin runs on.
            let storage = DeviceStorage(paths: runtime.paths)
            try await replyData(
                Self.pairs([
                    ("Model", runtime.profile.productType), ("FSTotalBytes", "\(storage.dataCapacity)"),
                    ("FSFreeBytes", "\(storage.dataAvailable)"), ("FSBlockSize", "4096"),
                ]), packet: packet)
        case .fileOpen:
            let mode = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            guard let url = resolve(Self.string(&data)) else {
                return try await replyStatus(.permissionDenied, packet: packet)
            }
            let opened: Result<FileHandle, Code> = Self.open(url, mode: mode)
            switch opened {
            case .failure(let code):
                try await replyStatus(code, packet: packet)
            case .success(let handle):
                let number = nextHandle
                nextHandle += 1
                files[number] = OpenFile(handle: handle, url: url)
                var body = ByteBuffer()
                body.writeInteger(number, endianness: .little)
                try await reply(.fileOpenResult, body: body, packet: packet)
            }
        case .fileRead:
            let number = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            let length = Int(data.readInteger(endianness: .little, as: UInt64.self) ?? 0)
            guard let file = files[number] else {
                return try await replyStatus(.invalidArgument, packet: packet)
            }
            let bytes = (try? file.handle.read(upToCount: min(length, 8 * 1024 * 1024))) ?? Data()
            try await replyData(bytes, packet: packet)
        case .fileSeek:
            let number = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            let whence = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            let offset = data.readInteger(endianness: .little, as: Int64.self) ?? 0
            guard let file = files[number] else {
                return try await replyStatus(.invalidArgument, packet: packet)
            }
            do {
                let base: Int64
                switch whence {
                case 1: base = Int64(try file.handle.offset())
                case 2: base = Int64(try file.handle.seekToEnd())
                default: base = 0
                }
                try file.handle.seek(toOffset: UInt64(max(0, base + offset)))
                try await replyStatus(.success, packet: packet)
            } catch {
                try await replyStatus(.invalidArgument, packet: packet)
            }
        case .fileTell:
            let number = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            guard let file = files[number], let offset = try? file.handle.offset() else {
                return try await replyStatus(.invalidArgument, packet: packet)
            }
            var body = ByteBuffer()
            body.writeInteger(offset, endianness: .little)
            try await reply(.fileTellResult, body: body, packet: packet)
        case .fileSetSize:
            let number = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            let size = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            guard let file = files[number], (try? file.handle.truncate(atOffset: size)) != nil else {
                return try await replyStatus(.invalidArgument, packet: packet)
            }
            try await replyStatus(.success, packet: packet)
        case .fileClose:
            let number = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            guard let file = files.removeValue(forKey: number) else {
                return try await replyStatus(.invalidArgument, packet: packet)
            }
            try? file.handle.close()
            try await replyStatus(.success, packet: packet)
        case .setFSBlockSize, .setSocketBlockSize:
            try await replyStatus(.success, packet: packet)
        case .status, .data, .fileOpenResult, .fileTellResult, .fileWrite:
            try await replyStatus(.invalidArgument, packet: packet)
        }
    }

    // MARK: paths and files

    /// Maps an AFC path (relative, or absolute from the service root) into `root`; nil if it would escape.
    private func resolve(_ path: String) -> URL? {
        var components: [String] = []
        for part in path.split(separator: "/") {
            switch part {
            case ".", "": continue
            case "..":
                guard !components.isEmpty else { return nil }
                components.removeLast()
            default: components.append(String(part))
            }
        }
        return components.reduce(root) { $0.appendingPathComponent($1) }
    }

    private static func exists(_ url: URL) -> Bool {
        (try? FileManager.default.attributesOfItem(atPath: url.path)) != nil
    }

    private static func open(_ url: URL, mode: UInt64) -> Result<FileHandle, Code> {
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        let exists = fileManager.fileExists(atPath: url.path, isDirectory: &isDirectory)
        if exists && isDirectory.boolValue { return .failure(.objectIsDirectory) }
        switch mode {
        case 1:  // r
            guard exists, let handle = try? FileHandle(forReadingFrom: url) else {
                return .failure(.objectNotFound)
            }
            return .success(handle)
        case 2:  // r+
            guard exists, let handle = try? FileHandle(forUpdating: url) else {
                return .failure(.objectNotFound)
            }
            return .success(handle)
        case 3, 4, 5, 6:  // w, w+, a, a+
            if !exists || mode == 3 || mode == 4 {
                guard fileManager.createFile(atPath: url.path, contents: nil) else {
                    return .failure(.objectNotFound)
                }
            }
            guard let handle = try? FileHandle(forUpdating: url) else { return .failure(.permissionDenied) }
            if mode >= 5 { _ = try? handle.seekToEnd() }
            return .success(handle)
        default:
            return .failure(.invalidArgument)
        }
    }

    /// GetFileInfo keys (PROTOCOL.md §4.2); times in nanoseconds since 1970.
    private static func fileInfo(_ url: URL) -> [(String, String)]? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path) else { return nil }
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        let type = attributes[.type] as? FileAttributeType
        let kind: String
        switch type {
        case .typeDirectory?: kind = "S_IFDIR"
        case .typeSymbolicLink?: kind = "S_IFLNK"
        default: kind = "S_IFREG"
        }
        let modified = (attributes[.modificationDate] as? Date) ?? Date()
        let created = (attributes[.creationDate] as? Date) ?? modified
        let links = (attributes[.referenceCount] as? NSNumber)?.intValue ?? 1
        var info: [(String, String)] = [
            ("st_size", "\(size)"), ("st_blocks", "\((size + 511) / 512)"), ("st_nlink", "\(links)"),
            ("st_ifmt", kind), ("st_mtime", "\(Int64(modified.timeIntervalSince1970 * 1_000_000_000))"),
            ("st_birthtime", "\(Int64(created.timeIntervalSince1970 * 1_000_000_000))"),
        ]
        if type == .typeSymbolicLink,
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)
        {
            info.append(("LinkTarget", target))
        }
        return info
    }

    private static func string(_ buffer: inout ByteBuffer) -> String {
        let view = buffer.readableBytesView
        let end = view.firstIndex(of: 0) ?? view.endIndex
        let length = end - view.startIndex
        let text = buffer.readString(length: length) ?? ""
        if buffer.readableBytes > 0 { buffer.moveReaderIndex(forwardBy: 1) }
        return text
    }

    private static func pairs(_ pairs: [(String, String)]) -> Data {
        nulTerminated(pairs.flatMap { [$0.0, $0.1] })
    }

    private static func nulTerminated(_ strings: [String]) -> Data {
        var data = Data()
        for string in strings {
            data.append(contentsOf: Array(string.utf8))
            data.append(0)
        }
        return data
    }

    // MARK: replies

    private func replyStatus(_ code: Code, packet: UInt64) async throws {
        var body = ByteBuffer()
        body.writeInteger(code.rawValue, endianness: .little)
        try await reply(.status, body: body, packet: packet)
    }

    private func replyData(_ data: Data, packet: UInt64) async throws {
        try await reply(.data, body: ByteBuffer(bytes: data), packet: packet)
    }

    /// Everything goes in the header part (this_length = entire_length), which the client accepts.
    private func reply(_ operation: Operation, body: ByteBuffer, packet: UInt64) async throws {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(40 + body.readableBytes)
        buffer.writeBytes(Self.magic)
        let length = UInt64(40 + body.readableBytes)
        buffer.writeInteger(length, endianness: .little)
        buffer.writeInteger(length, endianness: .little)
        buffer.writeInteger(packet, endianness: .little)
        buffer.writeInteger(operation.rawValue, endianness: .little)
        var body = body
        buffer.writeBuffer(&body)
        try await stream.write(buffer)
    }
}
