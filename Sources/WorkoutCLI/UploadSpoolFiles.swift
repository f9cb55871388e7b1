import Foundation
import WorkoutStore
import WorkoutUpload

/// The rest of live uploads that did not finish (`workout record --upload` with the server away at the end):
/// one JSON file per workout in `<store>.uploads/`, private to the user (0600 in a 0700 folder; the token is
/// never written). `workout push ID` resumes the live session from there, then removes the file.
enum UploadSpoolFiles {
    static func folder(store: WorkoutStore) -> String { store.path + ".uploads" }

    static func path(store: WorkoutStore, id: UUID) -> String {
        (folder(store: store) as NSString).appendingPathComponent(id.uuidString.lowercased() + ".json")
    }

    static func write(_ spool: UploadSpool, store: WorkoutStore) throws(UserFacingError) {
        let folder = folder(store: store)
        do {
            try FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw UserFacingError("cannot create \(folder) for the rest of the upload: \(error.localizedDescription)")
        }
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            data = try encoder.encode(spool)
        } catch {
            throw UserFacingError("cannot encode the rest of the upload: \(error)")
        }
        try writePrivateFile(Array(data), to: path(store: store, id: spool.session))
    }

    /// The spool of workout `id`, nil when there is none.
    static func read(store: WorkoutStore, id: UUID) throws(UserFacingError) -> UploadSpool? {
        let path = path(store: store, id: id)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(UploadSpool.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw UserFacingError("\(path) does not read (\(error)); remove it to push the workout as a FIT file")
        }
    }

    static func remove(store: WorkoutStore, id: UUID) {
        try? FileManager.default.removeItem(atPath: path(store: store, id: id))
    }
}
