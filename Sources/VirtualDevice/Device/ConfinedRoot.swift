import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A directory that client-given paths never leave: the root of every twin file service (AFC on the
/// media folder, crashreportcopymobile, house_arrest's vended containers) and of installation_proxy's
/// `PackagePath`.
///
/// A path is never handed to the kernel whole. It is walked one component at a time through open
/// directory descriptors (`openat` with `O_NOFOLLOW`): `..` takes a directory off the walk's own stack
/// and is refused at the root; a link is read (`readlinkat`) and its target walked the same way, an
/// absolute target from the service root — afcd's clients see the service root as `/`, so `/` names
/// the root, never the host's `/`. What the walk reaches is therefore inside the root after every
/// link, and a directory or link swapped in while it runs makes the next `openat` fail instead of
/// being followed: there is no window between check and use.
///
/// Links made here (`makeLink`) are refused when they lead outside, and so is a rename that would take
/// a relative link (or a folder holding one) where it would lead outside. An absolute target is
/// stored as the host path under the root it names (`attributes` gives clients the root-relative form
/// back), a relative one as given: host code that lets the kernel follow links — install reading a
/// package, the app writing its log into its container — stays inside too, and a relative link in an
/// uploaded bundle still names its sibling once installd moved the bundle.
struct ConfinedRoot: Sendable {
    /// The directory as configured.
    let url: URL
    /// Its real path (links in the configured path resolved), the prefix of stored link targets.
    let realPath: String
    /// Where the attributes of a walked item are read (through the walk's own descriptor path).
    let fileSystem: any FileSystem

    /// Most links one path may pass through (the kernel's own limit is 40).
    static let maximumLinks = 32

    enum Failure: Error, Equatable {
        /// The path, or a link on it, leads out of the root.
        case outside
        case notFound
        case notDirectory
        case isDirectory
        case exists
        case notEmpty
        case tooManyLinks
        case system(Int32)
    }

    enum LinkKind {
        case hard
        case symbolic
    }

    init(_ url: URL, fileSystem: any FileSystem) {
        self.url = url
        self.fileSystem = fileSystem
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        if realpath(url.path, &buffer) != nil {
            realPath = String(
                decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        } else {
            realPath = url.standardizedFileURL.path
        }
    }

    // MARK: the walk

    /// Where a walked path leads: an open descriptor of the directory holding its last component,
    /// that component's name ("." when the path is that directory itself), and the directory's
    /// components from the root. The descriptors close when it goes.
    final class Location {
        fileprivate var descriptors: [Int32]
        fileprivate var names: [String]
        let name: String

        fileprivate init(descriptors: [Int32], names: [String], name: String) {
            self.descriptors = descriptors
            self.names = names
            self.name = name
        }

        deinit {
            for descriptor in descriptors { close(descriptor) }
        }

        var directory: Int32 { descriptors[descriptors.count - 1] }
        /// The directory's components from the root.
        var directoryComponents: [String] { names }
        /// The path's components from the root, links resolved.
        var components: [String] { name == "." ? names : names + [name] }
        var isRoot: Bool { name == "." && names.isEmpty }
    }

    /// The components of a client path (`/` and `.` dropped; `..` kept for the walk).
    static func components(_ path: String) -> [String] {
        path.split(separator: "/").map(String.init).filter { $0 != "." }
    }

    /// Walks `path` from the root. A last component that is a link is followed when `followLast`;
    /// a missing last component is fine (the caller may create it); a missing directory on the way is
    /// made when `createDirectories`, else `notFound`.
    func locate(_ path: String, followLast: Bool, createDirectories: Bool = false) throws -> Location {
        let root = open(url.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { throw Failure.system(errno) }
        var descriptors = [root]
        var names: [String] = []
        var handedOver = false
        defer {
            if !handedOver { for descriptor in descriptors { close(descriptor) } }
        }
        func location(_ name: String) -> Location {
            handedOver = true
            return Location(descriptors: descriptors, names: names, name: name)
        }
        // Components still to walk, the next one last.
        var pending = Array(Self.components(path).reversed())
        var links = 0
        while let component = pending.popLast() {
            if component == ".." {
                guard descriptors.count > 1 else { throw Failure.outside }
                close(descriptors.removeLast())
                names.removeLast()
                continue
            }
            let directory = descriptors[descriptors.count - 1]
            let isLast = pending.isEmpty
            var info = stat()
            guard fstatat(directory, component, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                let error = errno
                guard error == ENOENT else { throw Failure.system(error) }
                if isLast { return location(component) }
                guard createDirectories else { throw Failure.notFound }
                guard mkdirat(directory, component, 0o755) == 0 || errno == EEXIST else {
                    throw Failure.system(errno)
                }
                pending.append(component)
                continue
            }
            switch info.st_mode & S_IFMT {
            case S_IFLNK:
                if isLast && !followLast { return location(component) }
                links += 1
                guard links <= Self.maximumLinks else { throw Failure.tooManyLinks }
                let (absolute, targetComponents) = interpret(try Self.readLink(directory, component))
                if absolute {
                    while descriptors.count > 1 { close(descriptors.removeLast()) }
                    names.removeAll()
                }
                pending.append(contentsOf: targetComponents.reversed())
            case S_IFDIR:
                if isLast { return location(component) }
                let next = openat(directory, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                // A link swapped in since fstatat fails here (ELOOP/ENOTDIR) instead of being followed.
                guard next >= 0 else { throw Failure.system(errno) }
                descriptors.append(next)
                names.append(component)
            default:
                if isLast { return location(component) }
                throw Failure.notDirectory
            }
        }
        return location(".")
    }

    /// A stored link target as the walk follows it: absolute (from the root) or relative, in components.
    private func interpret(_ target: String) -> (absolute: Bool, components: [String]) {
        guard target.hasPrefix("/") else { return (false, Self.components(target)) }
        if let inside = rootRelative(target) { return (true, Self.components(inside)) }
        // An absolute path this root did not store: from the service root, as a client means it.
        return (true, Self.components(target))
    }

    /// `target` without the root's real path, when it lies under it.
    private func rootRelative(_ target: String) -> String? {
        if target == realPath { return "/" }
        let prefix = realPath.hasSuffix("/") ? realPath : realPath + "/"
        guard target.hasPrefix(prefix) else { return nil }
        return "/" + target.dropFirst(prefix.count)
    }

    /// The root-relative components a link target names from `directory` (components from the root),
    /// links on the way followed; a part that does not exist yet is taken as written. Throws `outside`
    /// when it leads out of the root.
    func components(ofTarget target: String, from directory: [String]) throws -> [String] {
        let path = target.hasPrefix("/") ? target : (directory + [target]).joined(separator: "/")
        let all = Self.components(path)
        // The longest part that exists is walked (links followed, confined); the rest is taken as
        // written, and its `..` may not climb above the root either.
        var count = all.count
        while true {
            do {
                var walked = try locate(all[..<count].joined(separator: "/"), followLast: true).components
                for component in all[count...] {
                    if component == ".." {
                        guard !walked.isEmpty else { throw Failure.outside }
                        walked.removeLast()
                    } else {
                        walked.append(component)
                    }
                }
                return walked
            } catch Failure.notFound, Failure.notDirectory {
                count -= 1
            }
        }
    }

    private static func readLink(_ directory: Int32, _ name: String) throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlinkat(directory, name, &buffer, Int(PATH_MAX))
        guard length >= 0 else { throw Failure.system(errno) }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: operations

    /// lstat of the last component (a link is described, not followed) and, for a link, its target
    /// as clients see it.
    func attributes(_ path: String) throws -> (attributes: [FileAttributeKey: Any], linkTarget: String?) {
        let location = try locate(path, followLast: false)
        let hostPath = try Self.hostPath(location)
        guard let attributes = try? fileSystem.attributesOfItem(atPath: hostPath) else {
            throw Failure.notFound
        }
        var target: String?
        if attributes[.type] as? FileAttributeType == .typeSymbolicLink {
            let raw = try Self.readLink(location.directory, location.name)
            target = rootRelative(raw) ?? raw
        }
        return (attributes, target)
    }

    /// A path the kernel resolves to the walked item without leaving the root: on Linux through the
    /// held directory descriptor (/proc/self/fd), elsewhere the link-free path from the root.
    private static func hostPath(_ location: Location) throws -> String {
        guard let path = PlatformCalls.pathThroughDescriptor(location.directory, location.name) else {
            throw Failure.system(errno)
        }
        return path
    }

    /// The names in a directory (links to directories followed), unsorted, without `.` and `..`.
    func contentsOfDirectory(_ path: String) throws -> [String] {
        let location = try locate(path, followLast: true)
        return try Self.names(in: location.directory, location.name)
    }

    private static func names(in directory: Int32, _ name: String) throws -> [String] {
        let descriptor = openat(directory, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            let error = errno
            if error == ENOENT { throw Failure.notFound }
            if error == ENOTDIR { throw Failure.notDirectory }
            throw Failure.system(error)
        }
        guard let stream = fdopendir(descriptor) else {
            close(descriptor)
            throw Failure.system(errno)
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            // The name read in place: a record is only as long as its name, never a 256-byte copy.
            guard let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name) else { break }
            let name = String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// mkdir -p: every missing directory on the path is made; an existing directory is fine.
    func makeDirectory(_ path: String) throws {
        let location = try locate(path, followLast: true, createDirectories: true)
        guard location.name != "." else { return }
        if mkdirat(location.directory, location.name, 0o755) == 0 { return }
        let error = errno
        var info = stat()
        if error == EEXIST, fstatat(location.directory, location.name, &info, 0) == 0,
            info.st_mode & S_IFMT == S_IFDIR
        {
            return
        }
        throw error == EEXIST ? Failure.exists : Failure.system(error)
    }

    /// Removes a file, a link (not what it names) or a directory — an empty one unless `recursive`.
    /// The root itself is never removed.
    func remove(_ path: String, recursive: Bool) throws {
        let location = try locate(path, followLast: false)
        guard location.name != "." else { throw Failure.outside }
        try Self.remove(location.directory, location.name, recursive: recursive)
    }

    private static func remove(_ directory: Int32, _ name: String, recursive: Bool) throws {
        var info = stat()
        guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw errno == ENOENT ? Failure.notFound : Failure.system(errno)
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            guard unlinkat(directory, name, 0) == 0 else { throw Failure.system(errno) }
            return
        }
        if recursive {
            let descriptor = openat(directory, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else { throw Failure.system(errno) }
            defer { close(descriptor) }
            for entry in try names(in: descriptor, ".") {
                try remove(descriptor, entry, recursive: true)
            }
        }
        guard unlinkat(directory, name, AT_REMOVEDIR) == 0 else {
            let error = errno
            throw error == ENOTEMPTY || error == EEXIST ? Failure.notEmpty : Failure.system(error)
        }
    }

    /// Renames within the root; what is at the destination is replaced (a directory with its contents).
    func rename(_ source: String, to destination: String) throws {
        let from = try locate(source, followLast: false)
        let to = try locate(destination, followLast: false)
        guard from.name != ".", to.name != "." else { throw Failure.outside }
        try checkLinks(from.directory, from.name, movedTo: to.components)
        if renameat(from.directory, from.name, to.directory, to.name) == 0 { return }
        var info = stat()
        guard fstatat(from.directory, from.name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw Failure.notFound
        }
        guard fstatat(to.directory, to.name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw Failure.system(errno)
        }
        try Self.remove(to.directory, to.name, recursive: true)
        guard renameat(from.directory, from.name, to.directory, to.name) == 0 else {
            throw Failure.system(errno)
        }
    }

    /// Throws `outside` when the item `name` in `directory`, moved to `components` (from the root),
    /// is or holds a relative link that would lead out of the root from there.
    private func checkLinks(_ directory: Int32, _ name: String, movedTo components: [String]) throws {
        var info = stat()
        guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        switch info.st_mode & S_IFMT {
        case S_IFLNK:
            let target = try Self.readLink(directory, name)
            if !target.hasPrefix("/") {
                _ = try self.components(ofTarget: target, from: Array(components.dropLast()))
            }
        case S_IFDIR:
            let descriptor = openat(directory, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else { throw Failure.system(errno) }
            defer { close(descriptor) }
            for entry in try Self.names(in: descriptor, ".") {
                try checkLinks(descriptor, entry, movedTo: components + [entry])
            }
        default:
            return
        }
    }

    /// Makes a link at `path` to `target` (absolute from the root, or relative to the link's folder).
    /// Refused (`outside`) when the target leads out of the root; a hard link needs an existing file.
    func makeLink(_ kind: LinkKind, target: String, at path: String) throws {
        let link = try locate(path, followLast: false)
        guard link.name != "." else { throw Failure.exists }
        var info = stat()
        if fstatat(link.directory, link.name, &info, AT_SYMLINK_NOFOLLOW) == 0 { throw Failure.exists }
        switch kind {
        case .symbolic:
            let components = try components(ofTarget: target, from: link.directoryComponents)
            let stored =
                !target.hasPrefix("/")
                ? target : components.isEmpty ? realPath : realPath + "/" + components.joined(separator: "/")
            guard symlinkat(stored, link.directory, link.name) == 0 else {
                throw Failure.system(errno)
            }
        case .hard:
            let path =
                target.hasPrefix("/") ? target : (link.directoryComponents + [target]).joined(separator: "/")
            let source = try locate(path, followLast: true)
            guard source.name != ".",
                fstatat(source.directory, source.name, &info, AT_SYMLINK_NOFOLLOW) == 0
            else { throw Failure.notFound }
            guard info.st_mode & S_IFMT != S_IFDIR else { throw Failure.isDirectory }
            guard linkat(source.directory, source.name, link.directory, link.name, 0) == 0 else {
                throw Failure.system(errno)
            }
        }
    }

    enum OpenMode {
        case read
        case update
        case truncate
        case append
    }

    /// Opens a file (links followed inside the root; the file itself is opened with O_NOFOLLOW, so a
    /// link swapped in after the walk is refused). `truncate` and `append` create a missing file.
    func openFile(_ path: String, _ mode: OpenMode) throws -> FileHandle {
        let location = try locate(path, followLast: true)
        guard location.name != "." else { throw Failure.isDirectory }
        var flags = O_NOFOLLOW | O_CLOEXEC
        switch mode {
        case .read: flags |= O_RDONLY
        case .update: flags |= O_RDWR
        case .truncate: flags |= O_RDWR | O_CREAT | O_TRUNC
        case .append: flags |= O_RDWR | O_CREAT
        }
        var info = stat()
        if fstatat(location.directory, location.name, &info, AT_SYMLINK_NOFOLLOW) == 0,
            info.st_mode & S_IFMT == S_IFDIR
        {
            throw Failure.isDirectory
        }
        let descriptor = openat(location.directory, location.name, flags, 0o644)
        guard descriptor >= 0 else {
            let error = errno
            if error == ENOENT { throw Failure.notFound }
            if error == EISDIR { throw Failure.isDirectory }
            if error == ELOOP { throw Failure.outside }
            throw Failure.system(error)
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        if mode == .append { _ = try? handle.seekToEnd() }
        return handle
    }

    /// The host URL of a path inside the root (links resolved, none left on the way): for host code
    /// that needs a path, such as install reading an uploaded package.
    func hostURL(_ path: String) throws -> URL {
        let location = try locate(path, followLast: true)
        var info = stat()
        if location.name != "." && fstatat(location.directory, location.name, &info, AT_SYMLINK_NOFOLLOW) != 0
        {
            throw Failure.notFound
        }
        return location.components.reduce(url) { $0.appendingPathComponent($1) }
    }
}
