import Foundation
import HADeployCore
import Logging
import TestSupport

@testable import MobileDevice

/// The artifact tests build real apps and archives in temporary folders of the machine: they read
/// them through the machine's file system.
extension AppArtifact {
    static func inspect(_ url: URL) throws -> AppArtifact { try inspect(url, in: TestHost.fileSystem) }
}

extension IPAArchive {
    static func unpack(_ url: URL, into folder: URL, limits: Limits = .standard) throws -> URL {
        try unpack(url, into: folder, limits: limits, in: TestHost.fileSystem)
    }
}

extension USBDeviceOptions {
    /// Options for a device of the emulator, whose clock is the machine's.
    init(
        stateDirectory: URL, developerImageDirectories: [URL] = [], timeouts: USBTimeouts = USBTimeouts(),
        logger: Logger, launchSettle: Duration
    ) {
        self.init(
            fileSystem: TestHost.fileSystem, clock: TestHost.clock, stateDirectory: stateDirectory,
            developerImageDirectories: developerImageDirectories, timeouts: timeouts, logger: logger,
            launchSettle: launchSettle)
    }
}
