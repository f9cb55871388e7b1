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
        // Pass 2 reads each workout's element from here, by its offsets.
        let whole = FileHandle(forReadingAtPath: xml)
        defer { try? whole?.close() }
        do {
            try HealthExportReading.read(
                entry: (xml as NSString).lastPathComponent, xml: { Self.open(xml) },
                xmlPart: { from, to in whole.map { Self.part(of: $0, from: from, to: to) } }, routes: gpx,
                limits: options
            ) { outcome in
                switch outcome {
                case .failure(let error):
                    each(.failure(.format(path: label, error)))
                case .success(let workout):
                    var read = ReadWorkout(script: workout.script, anomalies: workout.anomalies, details: workout.details) {
                        saved, _ in
                        let rows = HealthComparison.rows(workout: saved, stated: workout.script.metadata)
                        var compared = workout.details
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

    /// A reader of the bytes `from..<to` of the open file `handle` (POSIX reads at their offsets).
    static func part(of handle: FileHandle, from: Int, to: Int) -> XMLPullParser.Read {
        var next = from
        return { buffer in
            let wanted = min(buffer.count, max(0, to - next))
            guard wanted > 0 else { return 0 }
            while true {
                let got = pread(handle.fileDescriptor, buffer.baseAddress, wanted, off_t(next))
                if got < 0, errno == EINTR { continue }
                guard got >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                next += got
                return got
            }
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
