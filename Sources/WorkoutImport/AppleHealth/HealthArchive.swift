import Foundation
import ZIPFoundation

/// Unpacks the parts of an `export.zip` the import reads into a private temporary folder, bounded.
///
/// Only `apple_health_export/` entries that are an export XML (`*.xml` directly in it, not the CDA
/// one) or a route (`workout-routes/*.gpx`) are written; everything else (`__MACOSX/`, `.DS_Store`,
/// ECG CSVs, clinical records) is skipped. An entry whose path leaves the folder (`..`, absolute),
/// a link, or one that inflates beyond its declared size, beyond `maximumEntrySize` or beyond
/// `maximumRatio` times its compressed size (a zip bomb) is refused with the entry's name. ZIPFoundation
/// stays inside this file.
enum HealthArchive {
    /// 16 GiB: far above any real export.xml (the largest reported is about 2 GiB).
    static let maximumEntrySize: UInt64 = 16 << 30
    /// Real export XML compresses about 10–20 : 1; 200 : 1 is no export.
    static let maximumRatio: UInt64 = 200

    /// The temporary folder holding the unpacked export; the caller removes it.
    static func extract(zip path: String) throws(HealthImportError) -> String {
        let archive: Archive
        do {
            archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
        } catch {
            throw .archive(entry: nil, detail: "\(path) is not a zip archive (or is cut short): \(error)")
        }
        let folder = (NSTemporaryDirectory() as NSString).appendingPathComponent("workout-health-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .archive(entry: nil, detail: "cannot create a temporary folder (\(error))")
        }
        do {
            try unpack(archive, into: folder)
        } catch {
            try? FileManager.default.removeItem(atPath: folder)
            throw error
        }
        return folder
    }

    /// Whether an entry is one the import reads, and where it goes under the folder.
    static func destination(of entryPath: String) -> String? {
        let parts = entryPath.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard !entryPath.hasPrefix("/"), !parts.contains(".."), !parts.contains("."), let first = parts.first else {
            return nil
        }
        let inExport = first == "apple_health_export" ? Array(parts.dropFirst()) : parts
        guard !inExport.isEmpty, !inExport.contains(where: { $0.hasPrefix("._") || $0 == "__MACOSX" || $0 == ".DS_Store" })
        else { return nil }
        if first == "__MACOSX" { return nil }
        let name = inExport.last ?? ""
        if inExport.count == 1, name.lowercased().hasSuffix(".xml"), !name.lowercased().contains("cda") {
            return name
        }
        if inExport.count == 2, inExport[0] == "workout-routes", name.lowercased().hasSuffix(".gpx") {
            return "workout-routes/" + name
        }
        return nil
    }

    private static func unpack(_ archive: Archive, into folder: String) throws(HealthImportError) {
        var wroteXML = false
        for entry in archive {
            let path = entry.path
            if path.hasPrefix("/") || path.split(separator: "/").contains("..") {
                throw .archive(entry: path, detail: "the entry's path leaves the export folder; refused")
            }
            guard let relative = destination(of: path) else { continue }
            guard entry.type == .file else {
                throw .archive(entry: path, detail: "a link or folder where a file is expected; refused")
            }
            let declared = entry.uncompressedSize
            guard declared <= maximumEntrySize else {
                throw .archive(entry: path, detail: "declares \(declared) bytes, over the \(maximumEntrySize)-byte bound")
            }
            let bound = min(maximumEntrySize, max(declared, 1))
            let ratioBound = max(entry.compressedSize, 1 << 16) &* maximumRatio
            let target = (folder as NSString).appendingPathComponent(relative)
            let parent = (target as NSString).deletingLastPathComponent
            do {
                try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            } catch {
                throw .archive(entry: path, detail: "cannot write it out (\(error))")
            }
            guard FileManager.default.createFile(atPath: target, contents: nil, attributes: [.posixPermissions: 0o600]),
                let handle = FileHandle(forWritingAtPath: target)
            else {
                throw .archive(entry: path, detail: "cannot write it out")
            }
            var written: UInt64 = 0
            var overflow: String?
            do {
                _ = try archive.extract(entry, bufferSize: 1 << 16, skipCRC32: false) { data in
                    written += UInt64(data.count)
                    if written > bound {
                        overflow = "inflates beyond its declared \(declared) bytes; refused"
                        throw CocoaError(.fileReadTooLarge)
                    }
                    if written > ratioBound {
                        overflow = "inflates over \(maximumRatio) times its compressed size (a zip bomb?); refused"
                        throw CocoaError(.fileReadTooLarge)
                    }
                    try handle.write(contentsOf: data)
                }
            } catch {
                try? handle.close()
                throw .archive(entry: path, detail: overflow ?? "cannot be decompressed (cut short or damaged: \(error))")
            }
            try? handle.close()
            if !relative.contains("/") { wroteXML = true }
        }
        if !wroteXML {
            throw .noExport(detail: "the zip holds no apple_health_export/export.xml")
        }
    }
}
