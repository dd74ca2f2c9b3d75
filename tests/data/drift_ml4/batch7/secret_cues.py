"""Round 11's cue patterns (issue 16, tried and not shipped: docs/drift.md "Round 11"): a secret put where it does
not belong. Per language, a secret noun near an exposure channel (either order) and a send/share/print verb before
a secret noun, added to the ``secret_misuse`` family of ``anchors/cues/<lang>.json``; the nouns also to ``secret``.

    python tests/data/drift_ml4/batch7/secret_cues.py   # from the repository root; then anchors train (the digest changes)
"""
import json
from pathlib import Path
W = 60  # characters between the secret and where it goes (Latin scripts)
SPEC = {
 "en": dict(
  noun=r"passwords?|passphrases?|api[- ]?keys?|access keys?|secret keys?|secrets|tokens?|credentials?|private keys?|ssh keys?|deploy keys?|signing keys?|connection strings?|(db|database) (url|uri|password)|service[- ]account( json| file| keys?)?|keystore|master password|admin (login|account|password)|login details|\.env( file)?",
  chan=r"logs?|stdout|console|the output|error (message|page)s?|crash reports?|stack traces?|wiki|confluence|notion|shared (doc|drive|folder|page|sheet|spreadsheet)|google (doc|sheet)s?|public|discord|slack|whatsapp|telegram|e-?mails?|tickets?|release notes?|changelog|vendors?|freelancers?|contractors?|recordings?|stream|artifacts?|docker ?hub|the image|dockerfile|bundle|front-?end|client[- ]side|default values?|constants?|query strings?|urls?",
  verb=r"send|share|post|upload|paste|email|dm|forward|print|echo|log|dump|show|display|expose|bake|copy|include|attach|publish"),
 "zh": dict(
  noun=r"密钥|密码|口令|token|私钥|凭证|凭据|证书|连接串|连接字符串|账号密码|账密|secret|api ?key|AK|SK|\.env|服务账号|service account|管理员账号",
  chan=r"日志|控制台|输出|报错|错误信息|前端|客户端|浏览器|镜像|Dockerfile|公开|开源|群里|群聊|微信|钉钉|飞书|企业微信|邮件|wiki|文档|Confluence|工单|发布说明|外包|供应商|顾问|直播|录屏|artifact|制品|默认值|常量|代码里|仓库|URL|链接"),
 "ja": dict(
  noun=r"パスワード|シークレット|秘密鍵|認証情報|トークン|APIキー|鍵ファイル|接続文字列|クレデンシャル|secrets?|\.env|サービスアカウント|管理者アカウント|証明書|アクセスキー",
  chan=r"ログ|標準出力|コンソール|エラーメッセージ|画面|フロント|クライアント|アプリ|イメージ|Dockerfile|公開|Wiki|Confluence|Notion|Slack|チャット|メール|チケット|リリースノート|外注|ベンダー|業者|録画|配信|artifact|アーティファクト|デフォルト値|定数|リポジトリ|共有|URL"),
 "es": dict(
  noun=r"contraseñas?|claves? (privadas?|de api|secretas?|de acceso|ssh)|api ?keys?|tokens?|credenciales?|secretos?|cadenas? de conexión|cuentas? de servicio|service account|\.env|usuario y contraseña|certificados?",
  chan=r"logs?|consola|salida|stdout|mensajes? de error|wiki|confluence|notion|documentos? compartidos?|drive|públic[oa]s?|slack|whatsapp|telegram|discord|correos?|e-?mails?|tickets?|notas de (la )?versión|proveedor(es)?|freelance|externos?|grabación|directo|artefactos?|imagen|dockerfile|frontend|lado del cliente|por defecto|constantes?|url",
  verb=r"manda|envía|envia|comparte|pasa|sube|publica|imprime|muestra|loguea|pega|adjunta|reenvía"),
 "de": dict(
  noun=r"passw(o|ö)rt\w*|kennw(o|ö)rt\w*|private?[rn]? (key|schlüssel)|api-?keys?|tokens?|zugangsdaten|secrets?|credentials|connection-?strings?|verbindungs(zeichenkette|string)|service-?accounts?|\.env|admin-?(account|zugang|passwort|login)|zertifikat\w*|ssh-?(key|schlüssel)",
  chan=r"logs?|konsole|stdout|ausgabe|fehlermeldung\w*|wiki|confluence|notion|öffentlich\w*|slack|teams|whatsapp|e-?mails?|mails?|tickets?|jira|release-?notes?|release-?notiz\w*|dienstleister\w*|freelancer\w*|externe\w*|aufzeichnung|stream|artefakt\w*|image|dockerfile|frontend|default-?wert\w*|standardwert\w*|konstante\w*|url",
  verb=r"schick|send|teil|poste|lad|gib .{0,20} aus|druck|zeig|leak|veröffentlich"),
 "fr": dict(
  noun=r"mots? de passe|mdp|clés? (privées?|d'api|api|secrètes?|ssh|d'accès)|api ?keys?|tokens?|jetons?|identifiants|secrets?|chaînes? de connexion|comptes? de service|service ?account\w*|\.env|certificats?",
  chan=r"logs?|console|sortie|stdout|messages? d'erreur|wiki|confluence|notion|docs? partagés?|drive|public|publique|slack|teams|whatsapp|discord|mails?|e-mails?|tickets?|notes de version|prestataires?|freelances?|sous-traitants?|enregistrement|live|artefacts?|image|dockerfile|front|côté client|par défaut|constantes?|url|wetransfer",
  verb=r"envoie|partage|poste|colle|affiche|logge|imprime|publie|transmets|balance|file"),
 "pt": dict(
  noun=r"senhas?|palavras?-passe|chaves? (privadas?|de api|secretas?|de acesso|ssh)|api ?keys?|tokens?|credenciais|segredos?|strings? de conexão|service account|contas? de serviço|\.env|certificados?|usuário e senha|utilizador e palavra-passe",
  chan=r"logs?|console|saída|stdout|mensage(m|ns) de erro|wiki|confluence|notion|docs? compartilhad[oa]s?|drive|públic[oa]s?|slack|teams|whatsapp|telegram|discord|e-?mails?|tickets?|notas de (versão|release)|fornecedor(es)?|freelas?|terceiros?|gravação|live|artefatos?|imagem|dockerfile|front|lado do cliente|padrão|constantes?|url|canal|grupo",
  verb=r"manda|envia|compartilha|partilha|posta|sobe|cola|imprime|mostra|loga|publica|repassa"),
}
CJK_W = 25
for lang, s in SPEC.items():
    p = Path(f"anchors/cues/{lang}.json")
    d = json.loads(p.read_text(encoding="utf-8"))
    fam = d["families"]
    cjk = lang in ("zh", "ja")
    b = "" if cjk else r"\b"
    w = CJK_W if cjk else W
    new = [f"{b}({s['noun']}){b}.{{0,{w}}}{b}({s['chan']}){b}",
           f"{b}({s['chan']}){b}.{{0,{w // 2}}}{b}({s['noun']}){b}"]
    if "verb" in s:
        new.append(f"{b}({s['verb']})\\w*\\b.{{0,40}}\\b({s['noun']})\\b")
    added = [x for x in new if x not in fam["secret_misuse"]]
    fam["secret_misuse"] += added
    fam["secret"].append(f"{b}({s['noun']}){b}")
    p.write_text(json.dumps(d, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(lang, len(added))
