"""Chinese rules, read against the clause after its subject and time words.

Order matters: the more specific reading comes first (最喜欢的是 before 喜欢, a
promise to the persona before a plain plan, a plan before a past trip).
"""

from __future__ import annotations

from tether.memories.enums import MemoryType as T
from tether.memories.extraction.rules import (
    DATED_PAST,
    EXPLICIT,
    FUTURE_ONLY,
    NOT_FUTURE,
    STATED,
    Rule,
    rule,
)

ADV = (
    r"(?:也|还|都|一直|真的|其实|确实|本来|就|可|倒是|始终|向来|一向|从来|真|是|依然|仍然|已经|早就"
    r"|完全|根本|压根|压根儿|自己|还是)*"
)
INT = r"(?P<int>很|非常|特别|超级|超|好|挺|蛮|最|太|十分|相当|贼|巨|尤其|真心|比较|更|还挺|越来越)?"
NEG = (
    r"(?P<neg>不太|不怎么|不是很|不是特别|不是太|没那么|没有那么|不那么|不再|再也不|已经不"
    r"|一点都不|一点也不|并不|也不|都不|不)"
)
LIKE = r"(?:喜欢上了|喜欢上|喜欢|爱上了|爱上|爱(?!好|人|情|心|国|护)|喜爱|热爱|钟爱|偏爱)"
NUM = r"(?P<obj>\d{1,3}|[零一二两三四五六七八九十百]{1,4})"
NAME = r"(?P<obj>[\u4e00-\u9fffA-Za-z·]{1,8}?)"
OCCUPATION = (
    r"[\u4e00-\u9fffA-Za-z]{0,6}?(?:店主|老板娘|个体户|全职妈妈|全职太太|工程师|程序员|设计师|老师|教师|医生|护士|律师|会计|厨师|司机|"
    r"记者|编辑|经理|总监|主管|老板|学生|研究生|博士|硕士|大学生|高中生|初中生|作家|画家|"
    r"摄影师|主播|博主|模特|店主|销售|客服|公务员|警察|军人|演员|歌手|运营|产品|创业者|"
    r"自由职业者|研究员|分析师|咨询师|翻译|导游|空姐|飞行员|快递员|外卖员|服务员|员工|师|员)"
)
HAS_NOUN = (
    r"(?:猫|狗|柯基|柴犬|金毛|泰迪|哈士奇|边牧|比熊|孩子|儿子|女儿|哥哥|姐姐|弟弟|妹妹|兔子|仓鼠"
    r"|鹦鹉|鱼|乌龟|车|房子|宠物|娃)"
)
EMOTION = (
    r"(?P<obj>难过|伤心|开心|高兴|快乐|焦虑|紧张|烦躁|郁闷|崩溃|孤独|寂寞|沮丧|生气|失落|兴奋|"
    r"害怕|担心|幸福|委屈|抑郁|心累|绝望|激动|感动|满足|压抑|难受|心情不好|心情很好|心情不错|"
    r"不开心|不高兴|emo|想哭|想家|压力(?:好|很|特别|超|太|有点|挺|巨)?大)"
)
LIFE_EVENT = (
    r"吵架|吵了一架|分手|和好|结婚|离婚|订婚|退休|毕业|辞职|失业|升职|加薪|怀孕|生娃|生孩子|"
    r"转正|被裁|出院|住院|考上|上岸|领证|求婚"
)
TO_PERSONA = r"(?:跟你|和你|给你|告诉你|陪你|请你|带你|找你|向你|对你|帮你)"

# Addressed to the persona; read on the whole clause.
INSTRUCTIONS: list[Rule] = [
    rule(
        rf"^(?:请|你)?(?:就|可以|直接|请|还是|以后)*(?:叫|喊|称呼)我{NAME}(?:就行|就好|就可以|吧|好了)?$",
        T.INSTRUCTION,
        "call_me",
    ),
    rule(
        r"^(?:请|你)?(?:千万)?(?:别|不要|不许|不准|别再|不要再)(?:再)?(?:跟我|和我|对我|给我)?"
        r"(?:提|提起|说起|聊|讲|问|推荐|安利|发)(?:起|到)?(?P<obj>.+)$",
        T.INSTRUCTION,
        "avoid_topic",
    ),
    rule(
        r"^(?:请|你)?(?:的)?(?P<obj>(?:回复|回答|回我|说话|讲话|聊天|回消息).*"
        r"(?:简短|简洁|短|长|详细|正式|随意|轻松|温柔|直接|口语|中文|英文|朋友|幽默|严肃|客气|啰嗦|表情).*)$",
        T.INSTRUCTION,
        "reply_style",
        persona_ok=True,
    ),
    rule(
        r"^(?:请|你)?(?P<obj>用(?:中文|英文|英语|粤语)(?:回复|回答|跟我说|和我聊|聊天))",
        T.INSTRUCTION,
        "reply_style",
        persona_ok=True,
    ),
]

# The thing comes first and the user second: 科幻片是我的最爱.
EXAM = (
    r"(?:面试|考试|笔试|复试|初试|答辩|签证|驾照|科目[一二三四]|雅思|托福|四级|六级|考研|体检|手术)"
)
OBJECT_FIRST: list[Rule] = [
    rule(r"^(?P<obj>[^，,。]{1,10}?)(?:是|就是)我(?:的)?(?:最爱|最喜欢的)", T.PREFERENCE, "likes"),
    # 奶茶我已经戒了 / 香菜我是真不吃: the thing is put first as the topic.
    rule(
        r"^(?P<obj>[\u4e00-\u9fff]{1,6}?)我(?:已经|现在|早就|也|是|真的|真)*(?:戒了|不吃了|不喝了|不玩了"
        r"|不碰了|不吃|不喝|不碰|不喜欢了?|不爱了?|受不了|讨厌)",
        T.PREFERENCE,
        "likes",
        negated=True,
    ),
    rule(
        rf"^(?P<obj>[\u4e00-\u9fff]{{0,4}}{EXAM})(?:终于|也|总算)?(?:通过了|过了|考完了|考过了|结束了|拿到了"
        r"|搞定了|做完了)",
        T.EVENT,
        "did",
        when=NOT_FUTURE,
    ),
]

RULES: list[Rule] = [
    rule(rf"^{ADV}最(?:喜欢|爱)的(?:[\u4e00-\u9fff]{{1,4}})?是(?P<obj>.+)$", T.PREFERENCE, "likes"),
    rule(r"^(?:的)?(?:爱好|兴趣|兴趣爱好)(?:是|有)(?P<obj>.+)$", T.PREFERENCE, "likes"),
    rule(rf"^{ADV}(?:对)?(?P<obj>.+?)(?:严重|有点|也|很)?过敏(?:了)?$", T.PROFILE, "allergic_to"),
    rule(
        rf"^{ADV}对(?P<obj>.+?)(?P<neg>不|没|没有|毫无){INT}(?:感兴趣|兴趣)$", T.PREFERENCE, "likes"
    ),
    rule(rf"^{ADV}对(?P<obj>.+?){INT}(?:感兴趣|有兴趣)$", T.PREFERENCE, "likes"),
    rule(rf"^{ADV}{INT}(?:迷上|沉迷|入坑)了?(?P<obj>.+)$", T.PREFERENCE, "likes"),
    rule(rf"^{ADV}{NEG}?{INT}{LIKE}(?:吃|喝)?(?P<obj>.+)$", T.PREFERENCE, "likes"),
    rule(
        rf"^{ADV}{INT}(?:讨厌|厌恶|反感|受不了|接受不了|忍受不了|烦|怕|恨|嫌弃)(?:吃|喝)?(?P<obj>.+)$",
        T.PREFERENCE,
        "likes",
        negated=True,
    ),
    rule(
        rf"^{ADV}(?:不再|再也不|已经不|不|已经不能|不能|不敢)(?:吃|喝|碰|玩|抽|追)(?P<obj>.+)$",
        T.PREFERENCE,
        "likes",
        negated=True,
    ),
    rule(rf"^{ADV}(?:在|正在|已经)?戒(?:掉)?了?(?P<obj>.+)$", T.PREFERENCE, "likes", negated=True),
    # Profile: single-valued facts need the subject said aloud (叫土豆 alone is not the user).
    rule(rf"^(?:的)?(?:名字)?(?:叫做|叫|名字叫|名字是){NAME}$", T.PROFILE, "name", when=EXPLICIT),
    rule(
        rf"^(?:已经|都|快|刚|刚满|满)*{NUM}(?:岁|周岁)(?:了|啦)?$", T.PROFILE, "age", when=EXPLICIT
    ),
    rule(rf"^(?:已经|都)?{NUM}(?:了|啦)$", T.PROFILE, "age", when=EXPLICIT),
    rule(r"^(?:的)?生日(?:是|在)(?P<obj>.+)$", T.PROFILE, "birthday", when=EXPLICIT),
    rule(r"^是(?P<obj>[\u4e00-\u9fff]{1,5})人$", T.PROFILE, "from", when=EXPLICIT),
    rule(r"^(?:来自|老家是|老家在|家乡是|家乡在)(?P<obj>.+)$", T.PROFILE, "from"),
    rule(
        rf"^{ADV}(?:搬回了?|回了?|回到了?)(?:老家|家乡)(?P<obj>[\u4e00-\u9fff]{{2,6}}?)(?:了|来了|去了)?$",
        T.PROFILE,
        "lives_in",
        extra=(("obj", "from"),),
    ),
    # Diet is one profile value: 吃素 / 素食者 / 吃全素.
    rule(
        rf"^{ADV}(?:开始|已经|改成|一直)?(?P<obj>吃素|吃全素|吃纯素|是素食者|是素食主义者)(?:了)?$",
        T.PROFILE,
        "diet",
    ),
    # Skills: 会弹吉他 / 会说日语.
    rule(
        rf"^{ADV}(?:会|能)(?P<obj>(?:弹|拉|吹|说|讲|做|游|画|唱|跳|写|开|修|织|编|下)[\u4e00-\u9fff]{{1,6}})$",
        T.FACT,
        "can",
    ),
    rule(
        rf"^{ADV}(?:住在|定居在|生活在|搬到了|搬到|搬去了|搬去|搬家到|搬回了|搬回)(?P<obj>.+?)(?:了|去了|来了)?$",
        T.PROFILE,
        "lives_in",
    ),
    rule(rf"^{ADV}在(?P<obj>[^，,]+?)(?:住|生活|定居)(?:了|着)?", T.PROFILE, "lives_in"),
    rule(
        rf"^{ADV}在(?P<obj>.+?)(?:做|当|担任)(?P<role>{OCCUPATION})(?:的)?$",
        T.PROFILE,
        "works_at",
        extra=(("role", "occupation"),),
    ),
    rule(rf"^{ADV}在(?P<obj>.+?)(?:工作|上班|实习|任职|打工)(?:了)?$", T.PROFILE, "works_at"),
    rule(
        rf"^{ADV}在(?P<obj>[^，,]+?)(?:读|上|念)(?:书|研究生|博士|本科|大学|高中|初中|大[一二三四]|研[一二三])$",
        T.PROFILE,
        "studies_at",
    ),
    rule(
        rf"^{ADV}(?:去了|进了|加入了|到了)(?:一家|家)?(?P<obj>.+?(?:公司|集团|银行|事务所|工厂|研究所|研究院))"
        r"(?:上班|工作)?了?$",
        T.PROFILE,
        "works_at",
    ),
    rule(
        rf"^{ADV}是(?:一名|一个|一位|个|名|位)?(?P<obj>{OCCUPATION})(?:啊|呀|哦)?$",
        T.PROFILE,
        "occupation",
        when=EXPLICIT,
    ),
    rule(rf"^{ADV}(?:做|当|干)(?P<obj>{OCCUPATION})(?:的)?$", T.PROFILE, "occupation"),
    rule(r"^(?:的)?(?:工作|职业)是(?P<obj>.+)$", T.PROFILE, "occupation"),
    rule(
        rf"^{ADV}(?:养了|养着|有)(?:一|两|二|三|四|五|几|\d+)?(?:只|条|个|位|头|匹|辆|套)"
        rf"(?P<obj>[\u4e00-\u9fff]{{0,4}}{HAS_NOUN})$",
        T.FACT,
        "has",
    ),
    rule(rf"^{ADV}养了?(?:只|条)?(?P<obj>[\u4e00-\u9fff]{{1,6}})$", T.FACT, "has"),
    # Promises to the persona and plans come before the past-tense trip rules.
    rule(
        rf"^{ADV}(?:答应你|答应过你|保证|发誓|承诺)(?:会|一定|一定会)?(?P<obj>.+)$",
        T.COMMITMENT,
        "promise",
        persona_ok=True,
    ),
    rule(rf"^{ADV}(?:约好|说好|约定)(?:了)?(?P<obj>.+)$", T.COMMITMENT, "promise", persona_ok=True),
    rule(
        rf"^{ADV}(?:一定|会|再|就|要)*(?P<obj>.*{TO_PERSONA}.*)$",
        T.COMMITMENT,
        "promise",
        when=FUTURE_ONLY,
        persona_ok=True,
    ),
    rule(
        rf"^{ADV}(?:要|会|得|将|打算|准备|计划|想|还要)?(?:和|跟)?[\u4e00-\u9fff]{{0,4}}?(?:一起)?去(?P<obj>.+)$",
        T.COMMITMENT,
        "plans",
        when=FUTURE_ONLY,
    ),
    rule(
        rf"^{ADV}(?:要|会|得|将|打算|准备|计划)(?P<obj>.+)$",
        T.COMMITMENT,
        "plans",
        when=FUTURE_ONLY,
    ),
    rule(rf"^{ADV}(?:打算|计划)(?:去)?(?P<obj>.+)$", T.COMMITMENT, "plans"),
    rule(
        rf"^{ADV}(?:在|正在)(?:学|学习|自学|练|练习|准备|备考|备战)(?!校|院)(?P<obj>.+)$",
        T.FACT,
        "learning",
    ),
    rule(rf"^{ADV}(?:开始|刚开始)(?:学|学习|练)(?P<obj>.+)$", T.FACT, "learning"),
    rule(
        rf"^{ADV}(?:和|跟)?[\u4e00-\u9fff]{{0,6}}?去(?P<obj>(?:吃|看|玩|逛|爬|唱|听)了.+)$",
        T.EVENT,
        "did",
        when=NOT_FUTURE,
    ),
    rule(
        rf"^{ADV}(?:又|也|刚|刚刚|还)?(?:去了|去过|到了|回了|回过)(?:一趟|一次|趟|次)?(?P<obj>.+?)"
        r"(?:玩|旅游|旅行|出差)?了?$",
        T.EVENT,
        "went",
        when=NOT_FUTURE,
    ),
    rule(rf"^{ADV}(?:又|也|刚)?去(?P<obj>[^了]+?)了$", T.EVENT, "went", when=NOT_FUTURE),
    rule(rf"^{ADV}(?P<obj>(?:和|跟).{{1,8}}?(?:{LIFE_EVENT}))了", T.EVENT, "did", when=NOT_FUTURE),
    rule(rf"^{ADV}(?P<obj>{LIFE_EVENT})了", T.EVENT, "did", when=NOT_FUTURE),
    rule(
        rf"^{ADV}(?:要|就要|会|准备|打算)?(?P<obj>{LIFE_EVENT})(?:了)?$",
        T.COMMITMENT,
        "plans",
        when=FUTURE_ONLY,
    ),
    rule(
        rf"^{ADV}(?:刚|刚刚|终于)(?P<obj>[\u4e00-\u9fff]{{0,3}}?(?:{LIFE_EVENT}))(?:了)?$",
        T.EVENT,
        "did",
        when=NOT_FUTURE,
    ),
    rule(
        r"^(?P<obj>[\u4e00-\u9fff]{1,6}?)(?:通过了|过了|考完了|考过了|搞定了|拿到了)$",
        T.EVENT,
        "did",
        when=NOT_FUTURE,
    ),
    rule(
        rf"^{ADV}(?:自己)?(?P<obj>(?:开了|创办了|成立了|开起了)[\u4e00-\u9fff]{{1,10}})$",
        T.EVENT,
        "did",
        when=NOT_FUTURE,
    ),
    rule(
        rf"^{ADV}(?:又|也|刚)?(?P<obj>(?:看|参加|跑|考|见|完成|拿到|参观|做|买|吃)了.+)$",
        T.EVENT,
        "did",
        when=DATED_PAST,
    ),
    rule(
        rf"^{ADV}{NEG}?(?:有点|有些|有一点|好|很|非常|特别|超级|超|太|真|挺|蛮|十分|越来越|巨)?{EMOTION}"
        r"(?:了|啊|呀|死了|极了|得不行|坏了)*$",
        T.EMOTION,
        "feels",
        when=STATED,
    ),
]
