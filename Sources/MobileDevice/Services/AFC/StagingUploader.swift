import CIMobileDevice
import Foundation
import HADeployCore

/// Streams an app into `PublicStaging/` over AFC, 1 MiB per FileWrite (what ideviceinstaller
/// sends and devices accept, PROTOCOL.md §4.3) from one reused buffer: memory stays flat whatever
/// the app's size. Each write is its own worker step with its own deadline.
struct StagingUploader {
    static let chunkSize = 1 << 20
    static let stagingDirectory = "PublicStaging"

    let afc: AFCClient
    let session: DeviceSession
    let timeouts: USBTimeouts
    let fileSystem: any FileSystem
    let progress: (Int64) -> Void

    /// Where the package goes: a file named after the bundle id for an `.ipa`, the bundle's own
    /// name for an `.app` directory (as ideviceinstaller does).
    /// The name is checked again here (not only when the artifact was read): this is the path the
    /// cleanup removes, and nothing outside `PublicStaging/` may ever be removed.
    static func packagePath(for app: AppArtifact) throws -> String {
        let name: String
        let problem: String?
        switch app.kind {
        case .ipa:
            name = app.bundleIdentifier
            problem = ArtifactNames.bundleIdentifierProblem(name)
        case .appDirectory:
            name = app.url.lastPathComponent
            problem = ArtifactNames.pathComponentProblem(name, what: "app folder name")
        }
        if let problem {
            throw MobileDeviceError(
                .invalidArtifact, step: "stage \(app.url.lastPathComponent)", device: nil,
                reason: "\(problem); nothing was sent to the device",
                nextStep: "Rebuild the app with a reverse-DNS bundle id and a plain .app name.")
        }
        return stagingDirectory + "/" + name
    }

    func upload(_ app: AppArtifact) async throws -> String {
        let remote = try Self.packagePath(for: app)
        let afc = self.afc
        try await session.run("prepare \(Self.stagingDirectory)", within: timeouts.request) {
            if try afc.fileInfo(Self.stagingDirectory) == nil { try afc.makeDirectory(Self.stagingDirectory) }
            // A leftover from an interrupted run would be merged into the new package.
            try afc.removeTree(remote)
        }
        let buffer = UploadBuffer(size: Self.chunkSize)
        var sent: Int64 = 0
        switch app.kind {
        case .ipa:
            sent = try await uploadFile(app.url, to: remote, buffer: buffer, sent: sent)
        case .appDirectory:
            try await session.run("afc_make_directory \(remote)", within: timeouts.request) {
                try afc.makeDirectory(remote)
            }
            for entry in try AppDirectoryWalker.entries(of: app.url, in: fileSystem) {
                let target = remote + "/" + entry.relativePath
                switch entry.kind {
                case .directory:
                    try await session.run("afc_make_directory \(target)", within: timeouts.request) {
                        try afc.makeDirectory(target)
                    }
                case .symbolicLink(let destination):
                    try await session.run("afc_make_link \(target)", within: timeouts.request) {
                        try afc.makeSymbolicLink(target: destination, at: target)
                    }
                case .file:
                    sent = try await uploadFile(entry.url, to: target, buffer: buffer, sent: sent)
                }
            }
        }
        return remote
    }

    private func uploadFile(_ url: URL, to remote: String, buffer: UploadBuffer, sent: Int64) async throws
        -> Int64
    {
        let afc = self.afc
        let reader: ChunkedFileReader
        do {
            reader = try ChunkedFileReader(url: url)
        } catch {
            throw MobileDeviceError(
                .hostIO, step: "read \(url.path)", device: session.identity,
                reason: "the file cannot be opened",
                nextStep: "Check that the app was built completely and is readable.")
        }
        let file = UncheckedReader(reader)
        let handle = try await session.run("afc_file_open \(remote)", within: timeouts.request) {
            try afc.open(remote, mode: AFC_FOPEN_WRONLY)
        }
        var total = sent
        do {
            while true {
                let count = try await session.run("afc_file_write \(remote)", within: timeouts.uploadChunk) {
                    () -> Int in
                    let count = try file.reader.read(into: buffer.bytes)
                    if count > 0 {
                        try afc.write(
                            handle, UnsafeRawBufferPointer(rebasing: buffer.bytes[0..<count]), path: remote)
                    }
                    return count
                }
                if count == 0 { break }
                total += Int64(count)
                progress(total)
            }
        } catch let error as MobileDeviceError {
            throw error
        } catch {
            throw MobileDeviceError(
                .hostIO, step: "read \(url.path)", device: session.identity, reason: "\(error)",
                nextStep: "Check that the app file is readable and not being rewritten by a build.")
        }
        try await session.run("afc_file_close \(remote)", within: timeouts.request) {
            try afc.close(handle, path: remote)
        }
        return total
    }
}

/// The one upload buffer, touched only by worker steps (one at a time).
final class UploadBuffer: @unchecked Sendable {
    let bytes: UnsafeMutableRawBufferPointer

    init(size: Int) {
        bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
    }

    deinit { bytes.deallocate() }
}

/// A file reader handed to worker steps (one at a time).
struct UncheckedReader: @unchecked Sendable {
    let reader: ChunkedFileReader
    init(_ reader: ChunkedFileReader) { self.reader = reader }
}
