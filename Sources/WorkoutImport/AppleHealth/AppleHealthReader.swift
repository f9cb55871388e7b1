import Foundation
import WorkoutEngine
import WorkoutFormats
import WorkoutModel

/// Reads Apple Health exports: `export.zip`, its unzipped folder, or `export.xml` (with the
/// `workout-routes/` folder beside it). See docs/apple-health.md.
public enum AppleHealthReader: WorkoutFileReader {
    public static let format = "Apple Health"

    public static func recognizes(head: [UInt8], name: String) -> Bool {
        let lower = name.lowercased()
        // A zip: FIT files never start so; the zip's content decides later (no export in it is an error).
        if head.starts(with: [0x50, 0x4B, 0x03, 0x04]) { return true }
        let text = String(decoding: head, as: UTF8.self)
        if text.contains("<HealthData") || text.contains("DOCTYPE HealthData") { return true }
        let trimmed = text.drop { $0.isWhitespace }
        if trimmed.hasPrefix("<Workout ") || trimmed.hasPrefix("<Record ") { return true }
        return lower == "export.xml" && !text.contains("<gpx")
    }

    /// The export XML and routes folder of a folder (the unzipped export or its parent), nil when
    /// it holds none.
    public static func exportFiles(inFolder path: String) -> (xml: String, routes: String?)? {
        let manager = FileManager.default
        var folder = path
        let nested = (path as NSString).appendingPathComponent("apple_health_export")
        var isFolder: ObjCBool = false
        if manager.fileExists(atPath: nested, isDirectory: &isFolder), isFolder.boolValue { folder = nested }
        guard let names = try? manager.contentsOfDirectory(atPath: folder) else { return nil }
        // The XML's name is localised (Exportieren.xml): the non-CDA .xml directly in the folder.
        let candidates = names.filter { $0.lowercased().hasSuffix(".xml") && !$0.lowercased().contains("cda") }.sorted()
        guard let name = candidates.first(where: { $0 == "export.xml" }) ?? candidates.first else { return nil }
        let routes = (folder as NSString).appendingPathComponent("workout-routes")
        return (
            (folder as NSString).appendingPathComponent(name),
            manager.fileExists(atPath: routes, isDirectory: &isFolder) && isFolder.boolValue ? routes : nil
        )
    }

    public static func read(
        path: String, options: ImportOptions, each: (Result<ReadWorkout, FileImportError>) -> Void
    ) throws(FileImportError) {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw .unreadable(path: path, detail: "no such file or folder")
        }
        if isFolder.boolValue {
            guard let files = exportFiles(inFolder: path) else {
                throw .format(path: path, HealthImportError.noExport(detail: "\(path) holds no export.xml"))
            }
            try read(xml: files.xml, routes: files.routes, label: path, options: options, each: each)
            return
        }
        var head = [UInt8]()
        if let handle = FileHandle(forReadingAtPath: path) {
            head = [UInt8]((try? handle.read(upToCount: 4)) ?? Data())
            try? handle.close()
        }
        if head.starts(with: [0x50, 0x4B]) || path.lowercased().hasSuffix(".zip") {
            let folder: String
            do {
                folder = try HealthArchive.extract(zip: path)
            } catch {
                throw .format(path: path, error)
            }
            defer { try? FileManager.default.removeItem(atPath: folder) }
            guard let files = exportFiles(inFolder: folder) else {
                throw .format(path: path, HealthImportError.noExport(detail: "the zip holds no apple_health_export/export.xml"))
            }
            try read(xml: files.xml, routes: files.routes, label: path, options: options, each: each)
            return
        }
        let sibling = ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent("workout-routes")
        var routesFolder: ObjCBool = false
        let routes = FileManager.default.fileExists(atPath: sibling, isDirectory: &routesFolder) && routesFolder.boolValue
            ? sibling : nil
        try read(xml: path, routes: routes, label: path, options: options, each: each)
    }

    static func read(
        xml: String, routes: String?, label: String, options: ImportOptions,
        each: (Result<ReadWorkout, FileImportError>) -> Void
    ) throws(FileImportError) {
        guard FileManager.default.isReadableFile(atPath: xml) else {
            throw .unreadable(path: xml, detail: "cannot open the export XML")
        }
        var gpx: [HealthExportReading.Open] = []
        if let routes, let names = try? FileManager.default.contentsOfDirectory(atPath: routes) {
            for name in names.sorted() where name.lowercased().hasSuffix(".gpx") {
                gpx.append { Self.open((routes as NSString).appendingPathComponent(name)) }
            }
        }
        // Both passes read this one open file (pass 2 each workout's element, by its offsets), and what it is when
        // pass 1 begins is checked before pass 2 reads it again (`HealthFileIdentity`).
        let whole = FileHandle(forReadingAtPath: xml)
        defer { try? whole?.close() }
        let identity = whole.flatMap { HealthFileIdentity(descriptor: $0.fileDescriptor) }
        do {
            try HealthExportReading.read(
                entry: (xml as NSString).lastPathComponent,
                xml: { whole.map { HealthExportReading.part(descriptor: $0.fileDescriptor, from: 0, to: Int.max) } },
                xmlPart: { from, to in
                    whole.map { HealthExportReading.part(descriptor: $0.fileDescriptor, from: from, to: to) }
                },
                splittable: whole.flatMap { handle in
                    identity.map { HealthSplittableFile(descriptor: handle.fileDescriptor, size: Int($0.size)) }
                },
                changed: { () -> String? in
                    guard let identity, let whole else { return nil }
                    return identity.change(descriptor: whole.fileDescriptor, path: xml)
                }, routes: gpx, limits: options
            ) { outcome in
                switch outcome {
                case .failure(let error):
                    each(.failure(.format(path: label, error)))
                case .success(let workout):
                    // The comparison keeps what the export states, not the script (whose samples are freed once saved).
                    let stated = workout.script.metadata
                    let details = workout.details
                    var read = ReadWorkout(script: workout.script, anomalies: workout.anomalies, details: details) {
                        saved, _ in
                        let rows = HealthComparison.rows(workout: saved, stated: stated)
                        var compared = details
                        compared.comparison = rows
                        return (rows, compared)
                    }
                    read.earlierIdentifiers = workout.earlierIdentifiers
                    each(.success(read))
                }
            }
        } catch {
            throw .format(path: label, error)
        }
    }

    /// A reader of the file at `path` (POSIX reads into the parser's buffer), nil when it cannot be opened.
    static func open(_ path: String) -> XMLPullParser.Read? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        return { buffer in
            while true {
                let got = Foundation.read(handle.fileDescriptor, buffer.baseAddress, buffer.count)
                if got < 0, errno == EINTR { continue }
                guard got >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                return got
            }
        }
    }
}

/// What a file is, as `fstat` tells it: its device and inode (which file), size and modification time (its content,
/// as far as a rewrite shows). An Apple Health import reads the export twice: a file rewritten or replaced between
/// the passes is refused (`HealthImportError.exportChanged`).
struct HealthFileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modifiedSeconds: Int
    var modifiedNanoseconds: Int

    init(_ status: stat) {
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        #if canImport(Darwin)
            modifiedSeconds = Int(status.st_mtimespec.tv_sec)
            modifiedNanoseconds = Int(status.st_mtimespec.tv_nsec)
        #else
            modifiedSeconds = Int(status.st_mtim.tv_sec)
            modifiedNanoseconds = Int(status.st_mtim.tv_nsec)
        #endif
    }

    /// The identity of the open file `descriptor`, nil when `fstat` fails.
    init?(descriptor: Int32) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        self.init(status)
    }

    /// What changed since this identity was taken, of the open file `descriptor` (rewritten in place) and of the
    /// file named `path` (another file saved under its name); nil when nothing did.
    func change(descriptor: Int32, path: String) -> String? {
        guard let open = HealthFileIdentity(descriptor: descriptor) else {
            return "it can no longer be read (\(String(cString: strerror(errno))))"
        }
        if let change = difference(open) { return change }
        var status = stat()
        guard stat(path, &status) == 0 else { return "\(path) is gone (\(String(cString: strerror(errno))))" }
        let named = HealthFileIdentity(status)
        if named.device != device || named.inode != inode {
            return "another file was saved as \(path) (device \(named.device), inode \(named.inode), "
                + "not \(device), \(inode))"
        }
        return difference(named)
    }

    private func difference(_ now: HealthFileIdentity) -> String? {
        if now.size != size { return "its size went from \(size) to \(now.size) bytes" }
        if (now.modifiedSeconds, now.modifiedNanoseconds) != (modifiedSeconds, modifiedNanoseconds) {
            let then = Date(timeIntervalSince1970: Double(modifiedSeconds) + Double(modifiedNanoseconds) / 1e9)
            let later = Date(timeIntervalSince1970: Double(now.modifiedSeconds) + Double(now.modifiedNanoseconds) / 1e9)
            return "it was modified at \(later), after \(then) when the import began"
        }
        return nil
    }
}
