//! A chat's floors over stdio, on SillyTavern chats with swipes, regenerations and a message
//! deleted in the middle: listing and jumping to floors, `snapshot://{chat}` resources, JSON
//! Patch diffs that apply back, reprocessing from the middle (the same states as processing the
//! edited chat from scratch, and no node left that nothing reaches), deleting one snapshot,
//! global snapshots as a chat's base, cleanup that refuses to delete every chat by accident, and
//! the snapshot tools' annotations and approvals (what destroys stored data asks, once).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use pretty_assertions::assert_eq;
use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, Transcript, assert_golden_text, call, spawn_binary, text,
};
use crate::snapshots::{enable_shipped, example, ok, refused};

/// A client that approves what it is asked (destructive snapshot tools ask), on a fresh SQLite
/// file store whose path is returned.
pub(crate) async fn client(directory: &Path) -> Client {
    let data = directory.display().to_string();
    spawn_binary(&["--data-dir", &data], approving()).await
}

/// A client that approves each question "from now on".
pub(crate) fn approving() -> TestClient {
    TestClient::new(Elicitation::Accept(
        json!({"approve": true, "remember": true}),
    ))
}

pub(crate) fn ai(swipe_id: usize, swipes: &[&str]) -> Value {
    json!({"is_user": false, "swipe_id": swipe_id, "swipes": swipes, "swipes_info": swipes.iter().map(|_| json!({})).collect::<Vec<_>>()})
}

pub(crate) fn user(text: &str) -> Value {
    json!({"is_user": true, "mes": text})
}

/// Writes `bindings` back and clears `cleared`, as a client does.
fn write_back(messages: &mut [Value], result: &Value) {
    for binding in result["cleared"].as_array().into_iter().flatten() {
        let index = usize::try_from(binding["messageIndex"].as_u64().unwrap()).unwrap();
        let swipe = usize::try_from(binding["swipeId"].as_u64().unwrap()).unwrap();
        messages[index]["swipes_info"][swipe]
            .as_object_mut()
            .unwrap()
            .remove("st_var_system_snapshot_id");
    }
    for binding in result["bindings"].as_array().unwrap() {
        let index = usize::try_from(binding["messageIndex"].as_u64().unwrap()).unwrap();
        let swipe = usize::try_from(binding["swipeId"].as_u64().unwrap()).unwrap();
        messages[index]["swipes_info"][swipe]["st_var_system_snapshot_id"] =
            binding["snapshotId"].clone();
    }
}

/// The example chat processed and bound: `(chat file, messages, the three floors' ids)`.
async fn processed_example(client: &Client) -> (String, Vec<Value>, Vec<Value>) {
    let chat = example();
    let processed = ok(client, "SnapshotProcess", chat.clone()).await;
    let mut messages = chat["messages"].as_array().unwrap().clone();
    write_back(&mut messages, &processed);
    let ids = processed["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|binding| binding["snapshotId"].clone())
        .collect();
    (chat["chatFile"].as_str().unwrap().to_owned(), messages, ids)
}

async fn state(client: &Client, id: &Value) -> Value {
    ok(client, "SnapshotGet", json!({"id": id})).await["snapshot"].clone()
}

/// Nodes in the store that no snapshot, template or global snapshot reaches.
fn unreachable_nodes(directory: &Path) -> usize {
    let connection = rusqlite::Connection::open(directory.join("synapse.db")).unwrap();
    let mut pending: Vec<String> = connection
        .prepare(
            "SELECT root FROM message_variables UNION SELECT root FROM templates \
             UNION SELECT root FROM global_snapshots",
        )
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let nodes: HashMap<String, String> = connection
        .prepare("SELECT hash, body FROM snapshot_nodes")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut reachable = HashSet::new();
    while let Some(hash) = pending.pop() {
        if reachable.insert(hash.clone())
            && let Some(body) = nodes.get(&hash)
        {
            synapse_mcp::store::tree::references(body, &mut pending);
        }
    }
    nodes
        .keys()
        .filter(|hash| !reachable.contains(*hash))
        .count()
}

#[tokio::test]
async fn floors_list_each_bound_message_with_what_it_changed_and_jump_to_one() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let (chat, _, ids) = processed_example(&client).await;

    let listed = ok(&client, "SnapshotList", json!({"chatFile": chat})).await;
    // The answer as the model reads it, whole: times are ISO 8601 to the second.
    let page = call(&client, "SnapshotList", json!({"chatFile": chat})).await;
    assert_golden_text("floors/list-page.txt", &text(&page));
    let floors: Vec<Value> = listed["floors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|floor| {
            crate::lean_answers::assert_readable_time(&floor["createdAt"]);
            assert!(floor["storedBytes"].as_u64().unwrap() > 0, "{floor}");
            json!([
                floor["messageIndex"],
                floor["swipeId"],
                floor["snapshotId"],
                floor["summary"]
            ])
        })
        .collect();
    assert_eq!(
        floors,
        [
            json!([0, 0, ids[0], "角色.名字 = \"林\"; 背包.1 = \"短剑\""]),
            json!([
                2,
                1,
                ids[1],
                "角色.金币 = 30; 背包.2 = \"治疗药水\"; 背包.3 = \"治疗药水\"; (+1 more)"
            ]),
            // ASSIGN wrote all of 角色, which takes the place of the two writes inside it.
            json!([
                4,
                0,
                ids[2],
                format!(
                    "世界 = {{\"时间\":\"第1天 黄昏\",\"地点\":\"灯塔\"}}; 角色 = {}",
                    "{\"名字\":\"林\",\"生命值\":85,\"金币\":65,\"称号\":…"
                )
            ]),
        ]
    );

    // Jumping to a floor: that message's snapshots, or an error that says which floors have one.
    let jumped = ok(
        &client,
        "SnapshotList",
        json!({"chatFile": chat, "messageIndex": 2}),
    )
    .await;
    assert_eq!(jumped["floors"].as_array().unwrap().len(), 1);
    let missing = refused(
        &client,
        "SnapshotList",
        json!({"chatFile": chat, "messageIndex": 3}),
    )
    .await;
    let unknown = refused(&client, "SnapshotList", json!({"chatFile": "nobody"})).await;
    let mut refusals = Transcript::default();
    refusals.add("SnapshotList of an unbound message", &missing);
    refusals.add("SnapshotList of an unknown chat", &unknown);
    refusals.assert_golden("floors/list-refusals.txt");

    // The chat is a resource of its own, listed and readable.
    let uri = "snapshot://%E8%89%BE%E6%8B%89%20-%202024-10-20%4015h30m00s";
    let resources = client.list_all_resources().await.unwrap();
    let listed_uri = resources
        .iter()
        .find(|resource| resource.name == chat)
        .map(|resource| resource.uri.clone());
    assert_eq!(listed_uri.as_deref(), Some(uri));
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("not text: {read:?}");
    };
    let floors: Value = serde_json::from_str(text).unwrap();
    assert_eq!(floors, listed);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_diff_applied_as_json_patch_gives_the_target() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let (_, _, ids) = processed_example(&client).await;
    ok(
        &client,
        "TemplateSet",
        json!({"characterId": "艾拉.png", "template": example()["template"]}),
    )
    .await;
    enable_shipped(&client, "JSON_PATCH").await;

    for (from, to) in [
        (ids[0].clone(), ids[2].clone()),
        (ids[2].clone(), ids[0].clone()),
        (json!("template:艾拉.png"), ids[1].clone()),
    ] {
        let diff = ok(&client, "SnapshotDiff", json!({"from": from, "to": to})).await;
        assert_eq!(diff["to"]["kind"], "snapshot", "{diff}");
        let patch = diff["patch"].clone();
        assert!(!patch.as_array().unwrap().is_empty());
        let base = if from.as_str().unwrap().starts_with("template:") {
            json!({"characterId": "艾拉.png"})
        } else {
            json!({"baseId": from})
        };
        let mut arguments =
            json!({"chatFile": "patched", "text": format!("<JSONPatch>{patch}</JSONPatch>")});
        arguments
            .as_object_mut()
            .unwrap()
            .extend(base.as_object().unwrap().clone());
        let applied = ok(&client, "SnapshotApply", arguments).await;
        assert_eq!(applied["errors"], json!([]));
        assert_eq!(applied["snapshot"], state(&client, &to).await);
    }
    let same = ok(
        &client,
        "SnapshotDiff",
        json!({"from": ids[1], "to": ids[1]}),
    )
    .await;
    assert_eq!(same["patch"], json!([]));
    let bad = refused(
        &client,
        "SnapshotDiff",
        json!({"from": ids[0], "to": "no-such-snapshot"}),
    )
    .await;
    let no_template = refused(
        &client,
        "SnapshotDiff",
        json!({"from": "template:nobody", "to": ids[0]}),
    )
    .await;
    let mut refusals = Transcript::default();
    refusals.add("SnapshotDiff to an unknown snapshot", &bad);
    refusals.add("SnapshotDiff from a missing template", &no_template);
    refusals.assert_golden("floors/diff-refusals.txt");
    client.cancel().await.unwrap();
}

/// A chat with swipes (messages 2 and 6 have others, the active one not always the last),
/// long enough to have a middle.
fn long_chat() -> Vec<Value> {
    vec![
        ai(0, &["开场 @.SET(\"角色.金币\", 10); @.SET(\"背包\", []);"]),
        user("走吧"),
        ai(
            1,
            &[
                "@.ADD(\"角色.金币\", 999);",
                "@.ADD(\"角色.金币\", 5); @.APPEND(\"背包\", \"剑\");",
            ],
        ),
        user("买药"),
        ai(0, &["@.SUB(\"角色.金币\", 3); @.APPEND(\"背包\", \"药\");"]),
        user("休息"),
        ai(
            2,
            &[
                "@.SET(\"天气\", \"雨\");",
                "@.SET(\"天气\", \"雪\");",
                "@.SET(\"天气\", \"晴\"); @.ADD(\"角色.金币\", 1);",
            ],
        ),
        user("继续"),
        ai(0, &["@.APPEND(\"背包\", \"盾\"); @.REMOVE(\"背包\", 0);"]),
        user("结束"),
        ai(0, &["@.ASSIGN(\"角色\", {\"称号\": \"旅人\"});"]),
    ]
}

/// A chat's floor list, and its snapshot ids by `(message index, swipe)`.
async fn floors_by_place(client: &Client, chat: &str) -> (Value, HashMap<(u64, u64), Value>) {
    let listed = ok(client, "SnapshotList", json!({"chatFile": chat})).await;
    let by_floor = listed["floors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|floor| {
            (
                (
                    floor["messageIndex"].as_u64().unwrap(),
                    floor["swipeId"].as_u64().unwrap(),
                ),
                floor["snapshotId"].clone(),
            )
        })
        .collect();
    (listed, by_floor)
}

/// The long chat processed as it grew — message 6 answered, regenerated (its swipe 2), then
/// continued — and bound: the messages and the ids of the floors from message 3 on.
async fn grown_long_chat(client: &Client) -> (Vec<Value>, Vec<Value>) {
    let whole = long_chat();
    let mut messages = whole[..7].to_vec();
    messages[6]["swipe_id"] = json!(0);
    let mut old_ids = Vec::new();
    for step in 0..3 {
        match step {
            1 => messages[6]["swipe_id"] = json!(2),
            2 => messages.extend_from_slice(&whole[7..]),
            _ => {}
        }
        let processed = ok(
            client,
            "SnapshotProcess",
            json!({"chatFile": "long", "messages": messages}),
        )
        .await;
        write_back(&mut messages, &processed);
        old_ids.extend(
            processed["bindings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|binding| binding["messageIndex"].as_u64().unwrap() >= 3)
                .map(|binding| binding["snapshotId"].clone()),
        );
    }
    assert_eq!(old_ids.len(), 5, "4-0, 6-0, 6-2, 8-0 and 10-0");
    (messages, old_ids)
}

#[tokio::test]
async fn reprocessing_from_the_middle_gives_the_states_of_processing_the_edited_chat_afresh() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let (mut messages, old_ids) = grown_long_chat(&client).await;

    // The user deletes message 4 and the prompt before it (3), and rewrites the regenerated
    // reply (now message 4, swipe 2).
    messages.drain(3..5);
    messages[4]["swipes"][2] = json!("@.SET(\"天气\", \"雾\"); @.ADD(\"角色.金币\", 100);");
    let asked_before = client.service().asked().len();
    let reprocessed = ok(
        &client,
        "SnapshotReprocess",
        json!({"chatFile": "long", "fromIndex": 3, "messages": messages}),
    )
    .await;
    // The user is asked one line about what is replaced, never the chat's JSON.
    assert_eq!(
        client.service().asked()[asked_before..],
        [
            "Reprocess chat `long` from message 3? It replaces the 4 floors stored from there on \
             (5 snapshots), recomputing 6 messages.\nTick `remember` to also allow, without \
             asking, every later `SnapshotReprocess` call with arguments \
             {chatFile:string,fromIndex:number,messages:array}."
        ]
    );
    assert_eq!(
        reprocessed["bindings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|binding| (binding["messageIndex"].clone(), binding["swipeId"].clone()))
            .collect::<Vec<_>>(),
        [
            (json!(4), json!(2)),
            (json!(6), json!(0)),
            (json!(8), json!(0))
        ]
    );
    let cleared: Vec<Value> = reprocessed["cleared"]
        .as_array()
        .unwrap()
        .iter()
        .map(|binding| json!([binding["messageIndex"], binding["swipeId"]]))
        .collect();
    assert_eq!(
        cleared,
        [json!([4, 0]), json!([4, 2]), json!([6, 0]), json!([8, 0])]
    );
    assert_eq!(
        reprocessed["base"]["messageIndex"],
        json!(2),
        "{reprocessed}"
    );
    // Four cleared bindings and the snapshot of the deleted message 4.
    assert_eq!(reprocessed["deleted"], json!(5));
    for id in &old_ids {
        let gone = refused(&client, "SnapshotGet", json!({"id": id})).await;
        assert_eq!(
            gone,
            format!(
                "no snapshot `{}`; its chat may have been deleted (SnapshotProcess makes new ones)",
                id.as_str().unwrap()
            )
        );
    }
    write_back(&mut messages, &reprocessed);

    // The same edited chat, from scratch, under another name.
    let mut fresh = messages.clone();
    for message in &mut fresh {
        if let Some(infos) = message["swipes_info"].as_array_mut() {
            for info in infos.iter_mut() {
                *info = json!({});
            }
        }
    }
    let scratch = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "scratch", "messages": fresh}),
    )
    .await;
    assert_eq!(scratch["vs_stat_data"], reprocessed["vs_stat_data"]);
    let (listed, by_floor) = floors_by_place(&client, "long").await;
    assert_eq!(by_floor.len(), 5, "floors 0, 2, 4, 6, 8: {listed}");
    for binding in scratch["bindings"].as_array().unwrap() {
        let floor = (
            binding["messageIndex"].as_u64().unwrap(),
            binding["swipeId"].as_u64().unwrap(),
        );
        assert_eq!(
            state(&client, &by_floor[&floor]).await,
            state(&client, &binding["snapshotId"]).await,
            "floor {floor:?}"
        );
    }
    assert_eq!(unreachable_nodes(directory.path()), 0);

    // Bad input names the value, and loses nothing.
    let past = refused(
        &client,
        "SnapshotReprocess",
        json!({"chatFile": "long", "fromIndex": 40, "messages": messages}),
    )
    .await;
    assert_golden_text("floors/reprocess-past-the-end.txt", &past);
    assert_eq!(
        ok(&client, "SnapshotList", json!({"chatFile": "long"})).await,
        listed
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn one_snapshot_is_deleted_with_the_nodes_only_it_used() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let (chat, _, ids) = processed_example(&client).await;
    let deleted = ok(&client, "SnapshotDelete", json!({"id": ids[1]})).await;
    assert_eq!(
        (
            deleted["snapshotId"].clone(),
            deleted["messageIndex"].clone()
        ),
        (ids[1].clone(), json!(2))
    );
    let listed = ok(&client, "SnapshotList", json!({"chatFile": chat})).await;
    assert_eq!(listed["floors"].as_array().unwrap().len(), 2);
    assert_eq!(unreachable_nodes(directory.path()), 0);
    let again = refused(&client, "SnapshotDelete", json!({"id": ids[1]})).await;
    assert_eq!(
        again.replace(ids[1].as_str().unwrap(), "<id>"),
        "no chat snapshot `<id>` to delete; SnapshotList shows a chat's snapshots \
         (SnapshotGlobalDelete deletes global ones)"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn global_snapshots_are_saved_listed_read_used_as_a_base_and_deleted() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let (_, _, ids) = processed_example(&client).await;
    let saved = ok(
        &client,
        "SnapshotGlobalSave",
        json!({"label": "码头之后", "description": "买完药", "from": ids[1]}),
    )
    .await;
    assert_eq!(saved["snapshot"], state(&client, &ids[1]).await);
    assert_eq!(saved["label"], "码头之后");
    let typed = ok(
        &client,
        "SnapshotGlobalSave",
        json!({"label": "富翁", "snapshot": {"角色": {"金币": 9999}}}),
    )
    .await;
    let taken = refused(
        &client,
        "SnapshotGlobalSave",
        json!({"label": "富翁", "snapshot": {"角色": {"金币": 1}}}),
    )
    .await;
    let replaced = ok(
        &client,
        "SnapshotGlobalSave",
        json!({"label": "富翁", "snapshot": {"角色": {"金币": 1}}, "replace": true}),
    )
    .await;
    assert_eq!(replaced["id"], typed["id"]);
    let reserved = refused(
        &client,
        "SnapshotGlobalSave",
        json!({"label": "template:x", "snapshot": {}}),
    )
    .await;
    let mut refusals = Transcript::default();
    refusals.add("SnapshotGlobalSave of a label taken", &taken);
    refusals.add("SnapshotGlobalSave of a reserved label", &reserved);

    let listed = ok(&client, "SnapshotGlobalList", json!({})).await;
    assert_eq!(
        listed["globals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|global| (global["label"].clone(), global["description"].clone()))
            .collect::<Vec<_>>(),
        [
            (json!("富翁"), json!("")),
            (json!("码头之后"), json!("买完药"))
        ]
    );
    let by_label = ok(&client, "SnapshotGlobalGet", json!({"id": "富翁"})).await;
    assert_eq!(by_label["snapshot"], json!({"角色": {"金币": 1}}));

    // A chat starts from it, instead of the template.
    let started = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "rich", "baseId": "富翁", "messages": [ai(0, &["@.ADD(\"角色.金币\", 5);"])]}),
    )
    .await;
    assert_eq!(
        started["base"],
        json!({"kind": "global", "snapshotId": typed["id"], "label": "富翁"})
    );
    assert_eq!(started["vs_stat_data"], json!({"角色": {"金币": 6}}));
    let applied = ok(
        &client,
        "SnapshotApply",
        json!({"chatFile": "rich", "baseId": saved["id"], "text": "@.ADD(\"角色.金币\", 1);"}),
    )
    .await;
    assert_eq!(applied["snapshot"]["角色"]["金币"], json!(31));

    let deleted = ok(&client, "SnapshotGlobalDelete", json!({"id": typed["id"]})).await;
    assert_eq!(deleted["label"], "富翁");
    let gone = refused(&client, "SnapshotGlobalGet", json!({"id": "富翁"})).await;
    refusals.add("SnapshotGlobalGet of a deleted label", &gone);
    refusals.assert_golden("floors/global-refusals.txt");
    assert_eq!(unreachable_nodes(directory.path()), 0);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cleanup_with_no_active_chat_refuses_unless_all_and_deleting_asks_first() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    processed_example(&client).await;
    let refused_all = refused(&client, "SnapshotCleanup", json!({"activeChatFiles": []})).await;
    let contradictory = refused(
        &client,
        "SnapshotCleanup",
        json!({"activeChatFiles": ["a"], "all": true}),
    )
    .await;
    let mut refusals = Transcript::default();
    refusals.add("SnapshotCleanup with no active chat", &refused_all);
    refusals.add("SnapshotCleanup with active chats and all", &contradictory);
    let everything = ok(
        &client,
        "SnapshotCleanup",
        json!({"activeChatFiles": [], "all": true}),
    )
    .await;
    assert_eq!(everything["deleted"], json!(3));
    assert_eq!(unreachable_nodes(directory.path()), 0);

    // The destructive tools are annotated so, and ask before they run: a client that cannot be
    // asked is refused (the default fallback), and nothing is deleted.
    let tools = client.list_all_tools().await.unwrap();
    for name in [
        "SnapshotDelete",
        "SnapshotDeleteChat",
        "SnapshotCleanup",
        "SnapshotReprocess",
        "SnapshotGlobalDelete",
    ] {
        let tool = tools.iter().find(|tool| tool.name == name).unwrap();
        let annotations = tool.annotations.as_ref().unwrap();
        assert_eq!(annotations.destructive_hint, Some(true), "{name}");
        assert_eq!(annotations.read_only_hint, Some(false), "{name}");
    }
    client.cancel().await.unwrap();
    let unasked = spawn_binary(
        &["--data-dir", &directory.path().display().to_string()],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let (chat, _, _) = processed_example(&unasked).await;
    let denied = refused(&unasked, "SnapshotDeleteChat", json!({"chatFile": chat})).await;
    refusals.add("SnapshotDeleteChat unasked", &denied);
    refusals.assert_golden("floors/cleanup-refusals.txt");
    let listed = ok(&unasked, "SnapshotList", json!({"chatFile": chat})).await;
    assert_eq!(listed["floors"].as_array().unwrap().len(), 3);
    unasked.cancel().await.unwrap();
}

/// A user function to create and rewrite.
fn heal() -> Value {
    json!({"name": "HEAL", "type": "active", "pattern": "@\\.HEAL\\((\\d+)\\);",
        "executor": "snapshot.hp = (snapshot.hp || 0) + args[0]; return snapshot;"})
}

/// `(name, read-only, destructive, idempotent)` of every tool of the `snapshots` group.
const SNAPSHOT_TOOL_HINTS: [(&str, bool, bool, bool); 26] = [
    ("SnapshotProcess", false, false, false),
    ("SnapshotApply", false, false, false),
    ("SnapshotGet", true, false, false),
    ("SnapshotUpdate", false, true, true),
    ("SnapshotDeleteChat", false, true, true),
    ("SnapshotCleanup", false, true, true),
    ("SnapshotEnable", false, true, true),
    ("FunctionList", true, false, false),
    ("FunctionUpsert", false, true, false),
    ("FunctionRemove", false, true, true),
    ("FunctionImport", false, false, false),
    ("FunctionExport", true, false, false),
    ("FunctionMove", false, true, true),
    ("FunctionReorder", false, true, true),
    ("FunctionEnable", false, true, true),
    ("FunctionTest", true, false, true),
    ("TemplateGet", true, false, false),
    ("TemplateSet", false, true, true),
    ("SnapshotList", true, false, false),
    ("SnapshotDiff", true, false, false),
    ("SnapshotReprocess", false, true, false),
    ("SnapshotDelete", false, true, true),
    ("SnapshotGlobalSave", false, true, true),
    ("SnapshotGlobalList", true, false, false),
    ("SnapshotGlobalGet", true, false, false),
    ("SnapshotGlobalDelete", false, true, true),
];

#[tokio::test]
async fn snapshot_tools_are_annotated_truthfully() {
    let client = spawn_binary(&[], approving()).await;
    let tools = client.list_all_tools().await.unwrap();
    let listed: HashSet<&str> = tools
        .iter()
        .map(|tool| tool.name.as_ref())
        .filter(|name| {
            ["Snapshot", "Function", "Template"]
                .iter()
                .any(|prefix| name.starts_with(prefix))
        })
        .collect();
    let hinted: HashSet<&str> = SNAPSHOT_TOOL_HINTS.iter().map(|hint| hint.0).collect();
    assert_eq!(listed, hinted, "every snapshot tool has its hints here");
    for (name, read_only, destructive, idempotent) in SNAPSHOT_TOOL_HINTS {
        let tool = tools.iter().find(|tool| tool.name == name).unwrap();
        let annotations = tool.annotations.as_ref().unwrap();
        assert_eq!(
            (
                annotations.read_only_hint,
                annotations.destructive_hint,
                annotations.idempotent_hint
            ),
            (Some(read_only), Some(destructive), Some(idempotent)),
            "{name}"
        );
    }
    client.cancel().await.unwrap();
}

/// Each call that replaces stored data is asked, once per argument shape (the user answers
/// "from now on"); a call that only adds, rearranges or switches is not.
#[tokio::test]
async fn replacing_stored_data_asks_once_and_adding_or_rearranging_does_not() {
    let asker = approving();
    let client = spawn_binary(&[], asker.clone()).await;
    let asks = |tool: &'static str, arguments: Value, expected: usize| {
        let client = &client;
        let asker = asker.clone();
        async move {
            let before = asker.asked().len();
            let result = ok(client, tool, arguments.clone()).await;
            let questions = &asker.asked()[before..];
            assert_eq!(
                questions.len(),
                expected,
                "{tool} {arguments}: {questions:?}"
            );
            assert!(
                questions.iter().all(|question| question.contains(tool)),
                "{questions:?}"
            );
            result
        }
    };
    // A first template, then two replacements: the second is remembered.
    for (gold, questions) in [(1, 0), (2, 1), (3, 0)] {
        let template = json!({"角色": {"金币": gold}});
        let arguments = json!({"characterId": "艾拉", "template": template});
        asks("TemplateSet", arguments, questions).await;
    }
    let function = heal();
    let created = asks("FunctionUpsert", json!({"function": function}), 0).await;
    let mut switched = created.clone();
    switched["enabled"] = json!(false);
    switched["order"] = json!(7);
    asks("FunctionUpsert", json!({"function": switched}), 0).await;
    let mut rewritten = created.clone();
    rewritten["executor"] = json!("snapshot.hp = 1; return snapshot;");
    asks("FunctionUpsert", json!({"function": rewritten}), 1).await;
    rewritten["description"] = json!("sets the hit points to 1");
    asks("FunctionUpsert", json!({"function": rewritten}), 0).await;
    let id = created["id"].clone();
    asks("FunctionEnable", json!({"ids": [id], "enabled": true}), 0).await;
    asks("FunctionReorder", json!({"ids": [id]}), 0).await;
    let moved = json!({"id": id, "toCharacterId": "艾拉"});
    asks("FunctionMove", moved, 0).await;
    let paused = json!({"chatFile": "paused", "setting": "off"});
    asks("SnapshotEnable", paused, 0).await;
    let applied = asks(
        "SnapshotApply",
        json!({"chatFile": "notes", "characterId": "艾拉", "text": "@.ADD(\"角色.金币\", 5);"}),
        0,
    )
    .await;
    let snapshot = applied["snapshotId"].clone();
    for (hp, questions) in [(1, 1), (2, 0)] {
        let arguments = json!({"id": snapshot, "snapshot": {"hp": hp}});
        asks("SnapshotUpdate", arguments, questions).await;
    }
    // New labels (with `replace` or not), then overwriting one: asked once.
    for (label, replace, questions) in [
        ("a", false, 0),
        ("b", true, 0),
        ("a", true, 1),
        ("b", true, 0),
    ] {
        let arguments = json!({"label": label, "snapshot": {"hp": 9}, "replace": replace});
        asks("SnapshotGlobalSave", arguments, questions).await;
    }
    client.cancel().await.unwrap();
}

/// A client that cannot be asked is refused (the default fallback) and nothing is replaced; what
/// only adds still runs.
#[tokio::test]
async fn a_client_that_cannot_be_asked_replaces_nothing() {
    let unasked = spawn_binary(&[], TestClient::new(Elicitation::Unsupported)).await;
    let template = json!({"角色": {"金币": 1}});
    let function = heal();
    ok(
        &unasked,
        "TemplateSet",
        json!({"characterId": "林", "template": template}),
    )
    .await;
    let denied = refused(
        &unasked,
        "TemplateSet",
        json!({"characterId": "林", "template": {"角色": {"金币": 2}}}),
    )
    .await;
    assert_golden_text("floors/template-set-unasked.txt", &denied);
    let kept = ok(&unasked, "TemplateGet", json!({"characterId": "林"})).await;
    assert_eq!(kept["template"], template);
    let applied = ok(
        &unasked,
        "SnapshotApply",
        json!({"chatFile": "notes", "text": "@.SET(\"hp\", 5);"}),
    )
    .await;
    let snapshot = applied["snapshotId"].clone();
    refused(
        &unasked,
        "SnapshotUpdate",
        json!({"id": snapshot, "snapshot": {"hp": 1}}),
    )
    .await;
    assert_eq!(state(&unasked, &snapshot).await, json!({"hp": 5}));
    let created = ok(&unasked, "FunctionUpsert", json!({"function": function})).await;
    let mut rewritten = created.clone();
    rewritten["executor"] = json!("return snapshot;");
    refused(&unasked, "FunctionUpsert", json!({"function": rewritten})).await;
    let library = ok(&unasked, "FunctionList", json!({})).await;
    let stored = library["global"]
        .as_array()
        .unwrap()
        .iter()
        .find(|function| function["id"] == created["id"])
        .unwrap();
    assert_eq!(stored["executor"], created["executor"]);
    unasked.cancel().await.unwrap();
}
