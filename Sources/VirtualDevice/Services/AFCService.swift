import Foundation
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Apple File Conduit over a directory (PROTOCOL.md §4): `com.apple.afc` serves the media root,
/// `com.apple.crashreportcopymobile` the crash-report directory.
///
/// FileWrite payloads are streamed to disk as they arrive; a 1 MiB packet is never held whole.
///
/// Every path is resolved inside the service root by `ConfinedRoot`, links followed: a path, or a
/// link, that leads out of the root is refused with Permission denied, and MakeLink refuses to make
/// such a link (an absolute target names a path from the service root, as on a device).
struct AFCService {
    let root: ConfinedRoot
    let runtime: DeviceRuntime
    let stream: ByteStream

    init(root: URL, runtime: DeviceRuntime, stream: ByteStream) {
        self.root = ConfinedRoot(root, fileSystem: runtime.fileSystem)
        self.runtime = runtime
        self.stream = stream
    }

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
    /// FileWrite data taken from the connection per step: a whole 1 MiB packet of the tools.
    static let writeBatch = 1 << 20

    final class OpenFile {
        let handle: FileHandle
        init(handle: FileHandle) {
            self.handle = handle
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
                    // The whole packet's data at once (1 MiB from the tools), up to a drop fault's cut.
                    let dropAt = runtime.uploadDropThreshold
                    let count = min(remaining, Self.writeBatch, dropAt.map { max(1, $0 - uploaded) } ?? .max)
                    let chunks = try await stream.readChunks(exactly: count, timeout: .seconds(30))
                    remaining -= count
                    uploaded += count
                    if let file, failure == nil {
                        do {
                            for chunk in chunks {
                                try chunk.withUnsafeReadableBytes { try file.handle.write(contentsOf: $0) }
                            }
                        } catch {
                            failure = .ioError
                        }
                    }
                    if let limit = dropAt, uploaded >= limit {
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
        switch operation {
        case .getFileInfo:
            let info: [(String, String)]
            do {
                info = Self.fileInfo(try root.attributes(Self.string(&data)))
            } catch {
                return try await replyStatus(Self.code(error, otherwise: .objectNotFound), packet: packet)
            }
            try await replyData(Self.pairs(info), packet: packet)
        case .readDirectory:
            let path = Self.string(&data)
            let names: [String]
            do {
                names = try root.contentsOfDirectory(path)
            } catch ConfinedRoot.Failure.notDirectory {
                // A file where a directory was asked for.
                let exists = (try? root.attributes(path)) != nil
                return try await replyStatus(exists ? .objectIsDirectory : .objectNotFound, packet: packet)
            } catch {
                return try await replyStatus(Self.code(error, otherwise: .objectNotFound), packet: packet)
            }
            try await replyData(Self.nulTerminated([".", ".."] + names.sorted()), packet: packet)
        case .makeDirectory:
            do {
                try root.makeDirectory(Self.string(&data))
                try await replyStatus(.success, packet: packet)
            } catch {
                try await replyStatus(Self.code(error, otherwise: .objectExists), packet: packet)
            }
        case .removePath, .removePathAndContents:
            do {
                try root.remove(Self.string(&data), recursive: operation == .removePathAndContents)
                try await replyStatus(.success, packet: packet)
            } catch ConfinedRoot.Failure.notEmpty {
                // The client turns code 1 into "directory not empty" (PROTOCOL.md §4.1).
                try await replyStatus(.unknown, packet: packet)
            } catch {
                try await replyStatus(Self.code(error, otherwise: .permissionDenied), packet: packet)
            }
        case .renamePath:
            let from = Self.string(&data)
            let to = Self.string(&data)
            do {
                try root.rename(from, to: to)
                try await replyStatus(.success, packet: packet)
            } catch {
                try await replyStatus(Self.code(error, otherwise: .ioError), packet: packet)
            }
        case .makeLink:
            let type = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            let target = Self.string(&data)
            let linkName = Self.string(&data)
            guard type == 1 || type == 2 else {
                return try await replyStatus(.invalidArgument, packet: packet)
            }
            do {
                try root.makeLink(type == 1 ? .hard : .symbolic, target: target, at: linkName)
                try await replyStatus(.success, packet: packet)
            } catch ConfinedRoot.Failure.outside {
                runtime.logger.info(
                    "AFC MakeLink refused: \(linkName) -> \(target) leads out of the service root")
                try await replyStatus(.permissionDenied, packet: packet)
            } catch ConfinedRoot.Failure.notFound where type == 2, ConfinedRoot.Failure.exists where type == 2
            {
                // ideviceinstaller 1.1.1 sends the *host* path as the link name (PROTOCOL.md §4.4); a
                // real device then fails quietly inside its sandbox, and so does this one.
                try await replyStatus(.success, packet: packet)
            } catch {
                try await replyStatus(Self.code(error, otherwise: .ioError), packet: packet)
            }
        case .getDeviceInfo:
            // The device's data partition (the same figures lockdown's disk_usage domain gives),
            // not the disk of the host the twin runs on.
            var storage = DeviceStorage(paths: runtime.paths, fileSystem: runtime.fileSystem)
            storage.available = await runtime.health.dataAvailable
            try await replyData(
                Self.pairs([
                    ("Model", runtime.profile.productType), ("FSTotalBytes", "\(storage.dataCapacity)"),
                    ("FSFreeBytes", "\(storage.dataAvailable)"), ("FSBlockSize", "4096"),
                ]), packet: packet)
        case .fileOpen:
            let rawMode = data.readInteger(endianness: .little, as: UInt64.self) ?? 0
            let mode: ConfinedRoot.OpenMode
            switch rawMode {
            case 1: mode = .read  // r
            case 2: mode = .update  // r+
            case 3, 4: mode = .truncate  // w, w+
            case 5, 6: mode = .append  // a, a+
            default: return try await replyStatus(.invalidArgument, packet: packet)
            }
            let handle: FileHandle
            do {
                handle = try root.openFile(Self.string(&data), mode)
            } catch {
                return try await replyStatus(Self.code(error, otherwise: .permissionDenied), packet: packet)
            }
            let number = nextHandle
            nextHandle += 1
            files[number] = OpenFile(handle: handle)
            var body = ByteBuffer()
            body.writeInteger(number, endianness: .little)
            try await reply(.fileOpenResult, body: body, packet: packet)
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

    /// The AFC status for a failure to resolve or act on a path.
    private static func code(_ error: any Error, otherwise: Code) -> Code {
        guard let failure = error as? ConfinedRoot.Failure else { return otherwise }
        switch failure {
        case .outside: return .permissionDenied
        case .notFound, .notDirectory: return .objectNotFound
        case .isDirectory: return .objectIsDirectory
        case .exists: return .objectExists
        case .notEmpty: return .unknown
        case .tooManyLinks: return .ioError
        case .system(let number):
            switch number {
            case EACCES, EPERM, ELOOP: return .permissionDenied
            case ENOENT: return .objectNotFound
            case EEXIST: return .objectExists
            case EISDIR: return .objectIsDirectory
            default: return otherwise
            }
        }
    }

    /// GetFileInfo keys (PROTOCOL.md §4.2); times in nanoseconds since 1970.
    private static func fileInfo(
        _ item: (attributes: [FileAttributeKey: Any], linkTarget: String?)
    ) -> [(String, String)] {
        let attributes = item.attributes
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        let type = attributes[.type] as? FileAttributeType
        let kind: String
        switch type {
        case .typeDirectory?: kind = "S_IFDIR"
        case .typeSymbolicLink?: kind = "S_IFLNK"
        default: kind = "S_IFREG"
        }
        let modified = (attributes[.modificationDate] as? Date) ?? EmulatorClock.now()
        let created = (attributes[.creationDate] as? Date) ?? modified
        let links = (attributes[.referenceCount] as? NSNumber)?.intValue ?? 1
        var info: [(String, String)] = [
            ("st_size", "\(size)"), ("st_blocks", "\((size + 511) / 512)"), ("st_nlink", "\(links)"),
            ("st_ifmt", kind), ("st_mtime", "\(Int64(modified.timeIntervalSince1970 * 1_000_000_000))"),
            ("st_birthtime", "\(Int64(created.timeIntervalSince1970 * 1_000_000_000))"),
        ]
        if let target = item.linkTarget { info.append(("LinkTarget", target)) }
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

    /// Data goes in the payload part, after a header-only "this" part, as a device sends it:
    /// libimobiledevice 1.3 reads the "this" part with a single receive and fails with "not enough
    /// data" when it arrives in pieces, while the payload part is read in a loop.
    private func replyData(_ data: Data, packet: UInt64) async throws {
        try await reply(.data, body: ByteBuffer(), payload: ByteBuffer(bytes: data), packet: packet)
    }

    /// Status codes, handles and positions go in the header-data part (this_length = entire_length).
    private func reply(
        _ operation: Operation, body: ByteBuffer, payload: ByteBuffer = ByteBuffer(), packet: UInt64
    ) async throws {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(40 + body.readableBytes + payload.readableBytes)
        buffer.writeBytes(Self.magic)
        let thisLength = UInt64(40 + body.readableBytes)
        buffer.writeInteger(thisLength + UInt64(payload.readableBytes), endianness: .little)
        buffer.writeInteger(thisLength, endianness: .little)
        buffer.writeInteger(packet, endianness: .little)
        buffer.writeInteger(operation.rawValue, endianness: .little)
        var body = body
        var payload = payload
        buffer.writeBuffer(&body)
        buffer.writeBuffer(&payload)
        try await stream.write(buffer)
    }
}
